/**
 * Which member of an endpoint pool serves a request: one chosen at random, every live member with the same
 * chance, as ngrok balances a pool. Random rather than round robin because requests for a host are resolved
 * in many isolates at once from each one's memory: a round-robin turn would be a counter shared by all of
 * them (an object call per request) or one per isolate, which spreads no better than chance and is state
 * kept across requests. A random pick needs neither.
 */

/** One of `members` (not empty), each with the same chance; `random` answers in [0, 1) like Math.random. */
export function chooseMember<T>(members: readonly T[], random: () => number = Math.random): T {
  if (members.length === 0) throw new Error("chooseMember: a pool has at least one member");
  // min(): a random source that answers 1 (outside its contract) must not pick past the end
  return members[Math.min(members.length - 1, Math.floor(random() * members.length))];
}
