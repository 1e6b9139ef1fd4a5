/**
 * The work one request's traffic policies may do while they run, metered as it is done and shared by every
 * expression and action of the request (both phases). Static bounds at load keep each expression linear in
 * the request; this keeps the constant small: past a budget the expression fails (counted false, its entry
 * skipped), and `log` output past its budget is dropped. docs/security.md gives the numbers and why.
 */

/**
 * CEL work per request: 1 per function call, plus the characters and elements each call takes and produces,
 * plus the elements every comprehension iterates over.
 */
export const MAX_CEL_WORK_PER_REQUEST = 1024 * 1024;
/** Regex work per request, in text characters × pattern instructions (RE2JS's worst case per unit: docs/security.md). */
export const MAX_REGEX_WORK_PER_REQUEST = 512 * 1024;
/** Bytes of `log` records one request may write (its metadata as JSON). */
export const MAX_LOG_BYTES_PER_REQUEST = 16 * 1024;

/** What an expression that goes past a budget fails with (its message is the evaluation error). */
export class BudgetExceeded extends Error {}

export interface BudgetLimits {
  readonly celWork: number;
  readonly regexWork: number;
  readonly logBytes: number;
}

const DEFAULT_LIMITS: BudgetLimits = { celWork: MAX_CEL_WORK_PER_REQUEST, regexWork: MAX_REGEX_WORK_PER_REQUEST, logBytes: MAX_LOG_BYTES_PER_REQUEST };

export class EvaluationBudget {
  private celWork = 0;
  private regexWork = 0;
  private logBytes = 0;
  /** `log` records dropped for want of budget, told with the request's next written record, if any. */
  droppedLogRecords = 0;

  constructor(private readonly limits: BudgetLimits = DEFAULT_LIMITS) {}

  /** Charges CEL work before (inputs) and after (outputs) a call; throws once the request is past its budget. */
  chargeCel(units: number): void {
    this.celWork += units;
    if (this.celWork > this.limits.celWork) {
      throw new BudgetExceeded(
        `expression exceeds the limit of ${this.limits.celWork} units of work per request (calls, characters and list elements taken and produced, loop iterations)`,
      );
    }
  }

  /** CEL work units left to this request (negative once past the budget). */
  celWorkLeft(): number {
    return this.limits.celWork - this.celWork;
  }

  /** Charges regex work before matching; throws, without charging, when it would go past the budget. */
  chargeRegex(units: number): void {
    if (this.regexWork + units > this.limits.regexWork) {
      throw new BudgetExceeded(
        `matches() exceeds the limit of ${this.limits.regexWork} units of regex work per request (text characters × pattern instructions)`,
      );
    }
    this.regexWork += units;
  }

  /** Log bytes left to this request. */
  logBytesLeft(): number {
    return Math.max(0, this.limits.logBytes - this.logBytes);
  }

  /** Takes `bytes` of log output; false (nothing taken) when they do not fit. */
  takeLogBytes(bytes: number): boolean {
    if (this.logBytes + bytes > this.limits.logBytes) return false;
    this.logBytes += bytes;
    return true;
  }
}
