/**
 * Resolves once the clock has passed `time`. A wait, never an assertion: on a loaded machine it only waits
 * longer. Tests use it where the property is about requests sent after a moment (an override's answer plus
 * one second). Date.now() is read in a loop because in workerd it advances only across I/O, so one timer of
 * the whole interval may resolve with the clock still short of `time`.
 */
export async function waitPast(time: number): Promise<void> {
  while (Date.now() < time) await new Promise((resolve) => setTimeout(resolve, Math.max(1, time - Date.now())));
}
