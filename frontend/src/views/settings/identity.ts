// Settings › Identity: the identity Companies see (spec 4.1) — Poppydesk's own, or an operator's
// (spec 10.7), enrolled here by URL with the token its administrator gives. An enrollment, and
// going back to the own identity, take effect when Poppydesk restarts; the section says so. The
// operator's client_name and logo come from Go's check of what the operator publishes; the logo
// arrives as a data: URL, so the window loads nothing remote. The demo's identity is its own and
// offers no enrollment.

import type { IdentityInfo, OperatorStatus, SettingsAPI } from "../../api";
import { describeError } from "../../api";
import { el } from "../../dom";
import { IDENTITY_SECTION_ID, operatorMark } from "../firstrun";
import type { SettingsSection } from "./index";

export const identitySection: SettingsSection = {
  id: IDENTITY_SECTION_ID,
  title: "Identity",
  render(body, { settings }) {
    if (!settings) {
      body.append(el("p", { class: "muted" }, "Identity is not available in this window."));
      return;
    }
    body.append(el("p", { class: "muted" }, "Loading…"));
    settings.identity().then(
      (info) => new IdentityPanel(body, settings, info).draw(),
      (err) => body.replaceChildren(el("p", { class: "si-error" }, `The identity could not be read: ${describeError(err)}`)),
    );
  },
};

// restartSentence says what the next start changes ("" when nothing).
export function restartSentence(info: IdentityInfo, status?: OperatorStatus): string {
  if (!info.restart) return "";
  switch (info.next) {
    case "operator": {
      const name = status?.reachable && status.clientName ? `${status.clientName} (${info.nextOperator})` : info.nextOperator;
      return `Restart Poppydesk to sign through ${name}.`;
    }
    case "self":
      return "Restart Poppydesk to sign with your own identity again.";
    default:
      return info.nextOperator
        ? `Restart Poppydesk after enrolling with ${info.nextOperator}.`
        : "Restart Poppydesk to stop using the operator. Poppydesk has no identity of its own yet: publish one (poppydesk identity export) so that it can act at Companies.";
  }
}

class IdentityPanel {
  private status: OperatorStatus | undefined;
  private checking = false;
  private message = "";
  private messageIsError = false;
  private confirming = false;
  // What the user typed survives a redraw.
  private url = "";
  private token = "";

  constructor(
    private readonly body: HTMLElement,
    private readonly backend: SettingsAPI,
    private info: IdentityInfo,
  ) {
    if (this.enrolled()) this.check(false);
  }

  private enrolled(): boolean {
    return this.info.mode !== "demo" && !!this.info.operator;
  }

  // shown is the identity the card shows: the next start's when a restart changes it.
  private shownMode(): string {
    return this.info.restart ? this.info.next : this.info.mode;
  }

  private check(say: boolean): void {
    this.checking = true;
    if (say) this.say("");
    this.draw();
    this.backend.checkOperator().then(
      (st) => {
        this.checking = false;
        this.status = st;
        if (say) this.say(st.error ? "" : `${st.clientName || st.operator} answers and signs with the key ${st.signingKid}.`);
        this.draw();
      },
      (err) => {
        this.checking = false;
        this.say(`Checking the operator failed: ${describeError(err)}`, true);
        this.draw();
      },
    );
  }

  private say(text: string, error = false): void {
    this.message = text;
    this.messageIsError = error;
  }

  draw(): void {
    const i = this.info;
    const parts: HTMLElement[] = [];
    parts.push(
      el(
        "p",
        { id: "identity-help" },
        "Companies see who your agent is by its identity: its client_id, the name and the logo its metadata publishes. Poppydesk can publish an identity of its own, or sign through your organisation’s operator, which publishes one identity for all its users and signs blindly for this device without seeing what it signs.",
      ),
    );
    parts.push(el("p", { class: "identity-label" }, i.restart ? "After a restart, Companies will see" : "Companies see"), this.card());
    const facts = el("dl", { class: "facts", id: "identity-facts" });
    const row = (k: string, v: string, id: string, mono = false) => facts.append(el("dt", {}, k), el("dd", { id, class: mono ? "path" : undefined }, v || "—"));
    row("This run signs as", i.clientId, "identity-client-id", true);
    if (this.enrolled()) {
      row("Operator", i.operator ?? "", "identity-operator", true);
      row("This device", `${i.deviceId ?? ""}${i.enrolled ? `, enrolled ${i.enrolled}` : ""}`, "identity-device", true);
    }
    const st = this.status;
    if (st?.reachable && !st.error) {
      row("Signing key", st.signingKid ?? "", "identity-kid", true);
      row("Signatures allowed", `${st.perHour ?? 0} an hour, ${st.perDay ?? 0} a day`, "identity-quota");
    }
    parts.push(facts);
    const next = restartSentence(i, st);
    if (next) parts.push(el("p", { class: "settings-note identity-restart", id: "identity-restart", role: "status" }, next));
    if (i.problem) parts.push(el("p", { class: "si-error", id: "identity-problem" }, i.problem));
    if (st?.error) parts.push(el("p", { class: "si-error", id: "identity-check-error" }, st.error));
    if (i.mode === "demo") {
      parts.push(el("p", { id: "identity-demo" }, "This is the demo’s own identity, published on this computer for the reference Company only. An operator is for the Poppydesk you use every day: start it without the demo to enroll."));
    } else if (i.fixed) {
      parts.push(el("p", { id: "identity-fixed" }, `This Poppydesk was started set to sign through ${i.operator || i.nextOperator}; the window cannot change that.`));
    } else {
      parts.push(...this.form());
    }
    parts.push(el("p", { class: this.messageIsError ? "si-error" : "settings-note", id: "identity-msg", "aria-live": "polite" }, this.message));
    this.body.replaceChildren(...parts);
  }

  private card(): HTMLElement {
    const i = this.info;
    const st = this.status;
    const mode = this.shownMode();
    const card = el("div", { class: "identity-card", id: "identity-card" });
    if (mode === "operator") {
      const name = st?.clientName || i.clientName || "";
      card.append(
        operatorMark(st, name, "identity-logo"),
        el(
          "div",
          {},
          el("strong", { id: "identity-name" }, name || (this.checking ? "Asking the operator…" : "The operator’s name is not known yet")),
          el("span", { class: "path facts-under", id: "identity-shown-client-id" }, st?.clientId || (i.restart ? "" : i.clientId)),
          st?.logoProblem ? el("span", { class: "facts-under", id: "identity-logo-problem" }, st.logoProblem) : null,
        ),
      );
      return card;
    }
    const words: Record<string, string> = {
      demo: "The demo’s own identity",
      self: "Your own published identity",
      none: "No identity yet: Poppydesk cannot act at Companies",
    };
    const clientId = mode === "self" ? (i.restart ? i.ownClientId : i.clientId) : mode === "demo" ? i.clientId : "";
    card.append(el("div", {}, el("strong", { id: "identity-name" }, words[mode] ?? words.none), clientId ? el("span", { class: "path facts-under", id: "identity-shown-client-id" }, clientId) : null));
    return card;
  }

  private form(): HTMLElement[] {
    const url = el("input", { type: "text", id: "identity-url", placeholder: "https://operator.example", value: this.url, autocomplete: "off", spellcheck: "false" });
    const token = el("input", { type: "password", id: "identity-token", placeholder: "ppd_enroll_…", value: this.token, autocomplete: "off" });
    url.addEventListener("input", () => (this.url = url.value));
    token.addEventListener("input", () => (this.token = token.value));
    const enroll = el("button", { type: "button", class: "btn btn-primary", id: "identity-enroll" }, this.enrolled() ? "Enroll again" : "Enroll");
    enroll.addEventListener("click", () => {
      enroll.disabled = true;
      this.url = url.value.trim();
      this.token = token.value.trim();
      this.say(`Enrolling with ${this.url || "the operator"}…`);
      this.backend.enrollOperator(this.url, this.token).then(
        (info) => {
          this.info = info;
          this.status = undefined;
          this.token = "";
          this.confirming = false;
          this.say("Enrolled. This device’s key is in your keyring; the operator knows only its public part.");
          this.check(false);
        },
        (err) => {
          this.say(`Enrolling failed: ${describeError(err)}`, true);
          this.draw();
        },
      );
    });
    const actions = el("div", { class: "settings-actions" }, enroll);
    if (this.enrolled()) {
      const check = el("button", { type: "button", class: "btn btn-secondary", id: "identity-check" }, this.checking ? "Checking…" : "Check");
      check.disabled = this.checking;
      check.addEventListener("click", () => this.check(true));
      actions.append(check);
    }
    const parts: HTMLElement[] = [
      el("h3", { class: "identity-form-title" }, this.enrolled() ? "Enroll with another operator" : "Use your organisation’s operator"),
      el("label", { for: "identity-url" }, "Operator URL"),
      url,
      el("label", { for: "identity-token" }, "Enrollment token (from the operator’s administrator; leave it empty where enrollment is open)"),
      token,
      actions,
    ];
    if (this.info.nextOperator) parts.push(...this.ownIdentity());
    return parts;
  }

  private ownIdentity(): HTMLElement[] {
    const note = el(
      "p",
      { class: "muted", id: "identity-own-help" },
      "Using your own identity again deletes this device’s enrollment from your keyring; Poppydesk keeps its current identity until it restarts. The operator lists the device until its administrator revokes it: give them the device ID above.",
    );
    const actions = el("div", { class: "settings-actions" });
    if (!this.confirming) {
      const own = el("button", { type: "button", class: "btn btn-secondary", id: "identity-own" }, "Use my own identity instead");
      own.addEventListener("click", () => {
        this.confirming = true;
        this.draw();
        this.body.querySelector<HTMLButtonElement>("#identity-own-cancel")?.focus();
      });
      actions.append(own);
    } else {
      const yes = el("button", { type: "button", class: "btn btn-danger", id: "identity-own-confirm" }, "Stop using the operator");
      const no = el("button", { type: "button", class: "btn btn-secondary", id: "identity-own-cancel" }, "Keep the operator");
      no.addEventListener("click", () => {
        this.confirming = false;
        this.draw();
      });
      yes.addEventListener("click", () => {
        yes.disabled = no.disabled = true;
        this.backend.useOwnIdentity().then(
          (info) => {
            this.info = info;
            this.status = undefined;
            this.confirming = false;
            this.say("The enrollment is deleted.");
            this.draw();
          },
          (err) => {
            this.confirming = false;
            this.say(`Going back to your own identity failed: ${describeError(err)}`, true);
            this.draw();
          },
        );
      });
      actions.append(no, yes);
    }
    return [el("h3", { class: "identity-form-title" }, "Your own identity"), note, actions];
  }
}
