// How long the way from an approval's event to its dialog on screen takes, as the window sees it:
// a trace starts when approvals:changed arrives, marks each step (the item read, the dialog
// built) and ends at the frame that shows the dialog. The report goes to Go
// (Approvals.DialogShown), which logs it with the time since the Host sent the event; the
// desktop smoke test reads that log line. It measures; it never decides anything.

import type { DialogStep } from "../../api";

export type ShownReport = (id: string, steps: DialogStep[]) => void;

export class DialogTrace {
  private id = "";
  private t0 = 0;
  private steps: DialogStep[] = [];

  constructor(
    private readonly report: ShownReport | undefined,
    private readonly now: () => number = () => performance.now(),
  ) {}

  // start begins the trace of approval id (the event just arrived).
  start(id: string): void {
    this.id = id;
    this.t0 = this.now();
    this.steps = [];
  }

  // mark records a step of the trace of id (nothing when another trace runs).
  mark(id: string, name: string): void {
    if (id === this.id && this.id) this.steps.push({ name, ms: Math.round((this.now() - this.t0) * 10) / 10 });
  }

  // painted ends the trace of id at the frame after the one that shows the dialog: the first
  // animation frame callback runs before that frame is painted, the second after it.
  painted(id: string, win: Window | null): void {
    if (id !== this.id || !this.id) return;
    this.id = "";
    const done = () => {
      this.steps.push({ name: "painted", ms: Math.round((this.now() - this.t0) * 10) / 10 });
      try {
        this.report?.(id, this.steps);
      } catch (err) {
        console.error("reporting the dialog's latency failed", err);
      }
    };
    if (!win || typeof win.requestAnimationFrame !== "function") return done();
    win.requestAnimationFrame(() => win.requestAnimationFrame(done));
  }
}
