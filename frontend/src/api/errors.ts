// The one way a failed Go call becomes words for the user. Wails rejects a call with the Go
// error's text (a string); the browser-testable bridge rejects with that string too, and with an
// Error when the bridge itself fails (fetch, a service not bound). Views put the sentence after
// their own words: `Approving failed: ${describeError(err)}`.

export const NO_DETAILS = "an unexpected error with no details";

export function describeError(err: unknown): string {
  if (typeof err === "string") return err.trim() ? err : NO_DETAILS;
  if (err instanceof Error) return err.message || err.name || NO_DETAILS;
  if (typeof err === "object" && err !== null && "message" in err && typeof err.message === "string" && err.message) {
    return err.message;
  }
  return NO_DETAILS;
}
