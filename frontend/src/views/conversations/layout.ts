// The Conversations section's frame: the side bar (Company, the conversation list, the start
// box) and the open conversation's pane (title, state, Hand off and Close, the Company's request
// to talk with the user, notices, the transcript and the composer). Empty until the view fills it.

import { el } from "../../dom";

export interface Layout {
  root: HTMLElement;
  problem: HTMLElement;
  select: HTMLSelectElement;
  list: HTMLUListElement;
  startText: HTMLTextAreaElement;
  startBtn: HTMLButtonElement;
  pane: HTMLElement;
  placeholder: HTMLElement;
  title: HTMLElement;
  // topic is the conversation's opening words, under the title (never the title itself).
  topic: HTMLElement;
  kindLine: HTMLElement;
  status: HTMLElement;
  handoff: HTMLButtonElement;
  close: HTMLButtonElement;
  invite: HTMLElement;
  notice: HTMLElement;
  scroller: HTMLElement;
  input: HTMLTextAreaElement;
  send: HTMLButtonElement;
}

export function layout(): Layout {
  const problem = el("p", { class: "conv-problem", id: "conv-problem", role: "alert", hidden: true });
  const select = el("select", { id: "conv-company", class: "conv-company", "aria-label": "Company" });
  const list = el("ul", { id: "conv-list", class: "conv-list", "aria-label": "Conversations" });
  const startText = el("textarea", { id: "conv-start-text", class: "conv-input", rows: 2, placeholder: "Write the first message…", "aria-label": "First message" });
  const startBtn = el("button", { type: "button", id: "conv-start", class: "btn btn-primary" }, "Start conversation");
  const side = el(
    "aside",
    { class: "conv-side" },
    el("label", { for: "conv-company", class: "conv-label" }, "Company"),
    select,
    el("h2", { class: "conv-side-title" }, "At this Company"),
    list,
    el("div", { class: "conv-start" }, el("label", { for: "conv-start-text", class: "conv-label" }, "Start a new conversation"), startText, startBtn),
  );

  const title = el("h2", { id: "conv-title", class: "conv-title" }, "");
  const topic = el("p", { id: "conv-topic", class: "conv-topic" });
  const kindLine = el("p", { id: "conv-kind", class: "conv-kind" });
  const status = el("p", { id: "conv-status", class: "conv-status", "aria-live": "polite" });
  const handoff = el("button", { type: "button", id: "conv-handoff", class: "btn btn-secondary btn-small" }, "Hand off to a person");
  const close = el("button", { type: "button", id: "conv-close", class: "btn btn-secondary btn-small" }, "Close conversation");
  const invite = el("div", { id: "conv-invite", class: "conv-invite", role: "region", "aria-label": "The Company asks to talk with you", hidden: true });
  const notice = el("div", { id: "conv-notice", class: "conv-notice", hidden: true });
  const scroller = el("div", { id: "conv-scroll", class: "conv-scroll", tabindex: 0, "aria-label": "Transcript" });
  const input = el("textarea", { id: "conv-input", class: "conv-input", rows: 2, "aria-label": "Your message" });
  const send = el("button", { type: "button", id: "conv-send", class: "btn btn-primary" }, "Send");
  const composer = el("div", { class: "conv-composer" }, input, send);
  const head = el("header", { class: "conv-head" }, el("div", { class: "conv-head-text" }, title, topic, kindLine, status), el("div", { class: "conv-actions" }, handoff, close));
  const pane = el("section", { class: "conv-pane", id: "conv-pane", "aria-labelledby": "conv-title", hidden: true }, head, invite, notice, scroller, composer);
  const placeholder = el("div", { class: "conv-placeholder", id: "conv-placeholder" });
  const main = el("div", { class: "conv-main" }, pane, placeholder);
  const root = el("div", { class: "conv-layout" }, side, main);
  return { root, problem, select, list, startText, startBtn, pane, placeholder, title, topic, kindLine, status, handoff, close, invite, notice, scroller, input, send };
}
