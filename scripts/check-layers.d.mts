/** Types of scripts/check-layers.mjs, for the tests that call it in-process. */

export declare function checkLayers(src: string, options?: { readonly ownTree?: boolean }): { findings: string[]; summary: string };
