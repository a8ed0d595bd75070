// The demo card (demo mode only): buttons that ask the reference Company for an exchange that
// needs approval, and the example agent — a scripted program that talks to Poppydesk only
// through the model interface — with its transcript shown as the agent's words.

import { type ApprovalsAPI, type ExampleAgentRun, describeError } from "../../api";
import { append, el } from "../../dom";

export type DemoBackend = Pick<ApprovalsAPI, "startDemoExchange" | "runExampleAgent" | "resetDemo">;

const IDLE: ExampleAgentRun = { running: false, lines: [], error: "" };

// agentRunOf reads the data of approvals:example-agent (or Approvals.ExampleAgent).
export function agentRunOf(r: ExampleAgentRun | null | undefined): ExampleAgentRun {
  return { running: !!r?.running, lines: Array.isArray(r?.lines) ? r.lines.map(String) : [], error: r?.error ? String(r.error) : "" };
}

// DemoCard keeps the example agent's transcript across re-renders of the card.
export class DemoCard {
  private run: ExampleAgentRun = IDLE;
  private button: HTMLButtonElement | null = null;
  private readonly transcript = el("div", { class: "agent-transcript", id: "agent-transcript", "aria-live": "polite" });
  // Reset demo and what it said, kept across re-renders of the card (the list is drawn again
  // whenever an approval changes, which a reset does).
  private readonly reset = el("button", { type: "button", class: "btn btn-secondary", id: "demo-reset" }, "Reset demo");
  private readonly resetNote = el("p", { class: "muted", id: "demo-reset-note", "aria-live": "polite" });
  // note says how the last demo request went, kept across re-renders until Reset demo.
  private readonly note = el("p", { class: "muted", id: "demo-note", "aria-live": "polite" });

  constructor(private readonly backend: DemoBackend) {
    this.reset.addEventListener("click", () => {
      const reset = this.reset;
      reset.disabled = true;
      this.resetNote.textContent = "Resetting the demo…";
      this.backend.resetDemo().then(
        () => {
          reset.disabled = false;
          // What went wrong before the reset is no longer true: the request's note and a
          // finished agent's transcript go.
          this.note.textContent = "";
          if (!this.run.running) this.show(IDLE);
          this.resetNote.textContent =
            "The demo is as it was at start: the order is back, nothing was exchanged, and the demo account is signed in again. Approvals that were still waiting are declined and stay listed as records.";
        },
        (err) => {
          reset.disabled = false;
          this.resetNote.textContent = `Resetting the demo failed: ${describeError(err)}`;
        },
      );
    });
  }

  // card builds the card for the demo Company (named companyName).
  card(companyName: string): HTMLElement {
    const note = this.note;
    const mk = (kind: string, label: string) => {
      const b = el("button", { type: "button", class: kind === "api" ? "btn btn-primary" : "btn btn-secondary", id: `demo-${kind}` }, label);
      b.addEventListener("click", () => {
        b.disabled = true;
        note.textContent = "Asking the reference Company for the exchange…";
        this.backend.startDemoExchange(kind).then(
          (msg) => {
            note.textContent = msg;
            b.disabled = false;
          },
          (err) => {
            note.textContent = `The demo request failed: ${describeError(err)}`;
            b.disabled = false;
          },
        );
      });
      return b;
    };
    const runAgent = el("button", { type: "button", class: "btn btn-secondary", id: "demo-agent" }, "Run the example agent");
    runAgent.disabled = this.run.running;
    runAgent.addEventListener("click", () => {
      runAgent.disabled = true;
      this.show({ running: true, lines: [], error: "" });
      this.backend.runExampleAgent().then(
        () => undefined,
        (err) => this.show({ running: false, lines: this.run.lines, error: `The example agent could not start: ${describeError(err)}` }),
      );
    });
    this.button = runAgent;
    return el(
      "section",
      { class: "card demo-card", "aria-labelledby": "demo-title" },
      el("h2", { id: "demo-title" }, `Demo: ${companyName || "the reference Company"}`),
      el("p", { class: "muted" }, "Ask the reference Company to exchange the Stormline Jacket (M) for the insulated one, as your agent would. The Company answers that it needs your approval, and the dialog opens."),
      el("div", { class: "approval-actions" }, mk("api", "Request the jacket exchange (API)"), mk("mcp", "Request the jacket exchange (MCP)")),
      note,
      el("p", { class: "muted" }, "Or run the example agent: a small scripted program (no AI) that talks to Poppydesk only through the model interface (MCP), as your own agent would. It can ask, never approve; you decide in the dialog."),
      el("div", { class: "approval-actions" }, runAgent),
      this.transcript,
      el("h3", { class: "demo-subtitle" }, "Try it again"),
      el("p", { class: "muted" }, "Reset demo puts the reference Company back as it was at start (its orders, what it performed, its sign-ins) so every flow can be tried again."),
      el("div", { class: "approval-actions" }, this.reset),
      this.resetNote,
    );
  }

  // show records the example agent's transcript and shows it.
  show(run: ExampleAgentRun): void {
    this.run = run;
    const r = this.run;
    const lines = r.lines ?? [];
    if (this.button) this.button.disabled = r.running;
    if (!r.running && lines.length === 0 && !r.error) {
      this.transcript.replaceChildren();
      return;
    }
    const words = el("ol", { class: "si-model-quote agent-lines", id: "agent-lines" });
    for (const line of lines) words.appendChild(el("li", {}, line));
    const box = el("div", { class: "si-model", role: "note" });
    append(box, [
      el("p", { class: "si-model-label" }, "The example agent says:"),
      words,
      el("p", { class: "si-model-note" }, "These are the agent’s words, not Poppydesk’s. It cannot approve anything; only your Approve in the dialog does."),
    ]);
    const nodes: Node[] = [box, el("p", { class: "muted", id: "agent-state" }, r.running ? "The example agent is running…" : "The example agent has finished.")];
    if (r.error) nodes.push(el("p", { class: "result-error", role: "alert", id: "agent-error" }, r.error));
    this.transcript.replaceChildren(...nodes);
  }
}
