// Types of bin/relaunch.mjs for the TypeScript that imports it (the bench).
export declare const HEAP_FLOOR_FLAG: string;
export declare function relaunchWithHeapFloor(): boolean;
