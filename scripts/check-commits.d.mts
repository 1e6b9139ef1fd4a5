/** Types of scripts/check-commits.mjs, for the tests that import it. */

export declare const BASE: string;
export declare const MAX_SUBJECT_CHARS: number;
export declare function overlongSubjects(log: string, max?: number): Array<{ hash: string; subject: string }>;
