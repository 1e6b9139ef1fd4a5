/** Every policy file under `<root>/policies`: repository path → text. */
export function readPolicyFiles(root: string): Record<string, string>;
