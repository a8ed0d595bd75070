// The countdown of a sign-in in progress.

// formatCountdown shows whole seconds as m:ss (or h:mm:ss).
export function formatCountdown(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, "0");
  return h > 0 ? `${h}:${String(m).padStart(2, "0")}:${ss}` : `${m}:${ss}`;
}

// secondsLeft is the countdown of a view received at receivedAt (ms), as of now (ms): the Go side
// gives the seconds left when it made the view, so the two clocks never need to agree.
export function secondsLeft(remainingSeconds: number, receivedAt: number, now: number): number {
  return Math.max(0, Math.ceil(remainingSeconds - (now - receivedAt) / 1000));
}
