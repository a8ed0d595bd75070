// The Conversations section (spec 8.3–8.12, 10.1; Operations 4 "Conversations").
//
// Per Company: the list of conversations, a start box, and the open conversation's transcript
// with who wrote each message ("Your agent" for the model, "You" for the user's own words, the
// Company's agent, or a named person at the Company with their picture), text-delta pieces shown
// live as they arrive and replaced by the full message (spec 8.6), the status and responder in
// plain words (8.7), Hand off (8.9) and Close (8.12) buttons, the Company's request to talk with
// the user with Accept / Decline (8.10: Accept is the ONLY way a Direct Conversation is accepted),
// and a composer where the user types their own words (author.type "human", 8.8).
//
// Everything from the Company is set with textContent (dom.ts): never HTML. The Go service has
// already made invisible and direction-changing characters visible (operations.Visible), and
// passes pictures only as data: URLs (the CSP forbids remote loads); anything else is a
// placeholder with the person's initial.
//
// This file holds the section's state and reaches Go; the frame is layout.ts, the transcript
// transcript.ts, virtual-list.ts and row.ts, the pane's notices notices.ts.

import { type ConversationCompany, type ConversationState, type ConversationsAPI, EVENTS, describeError } from "../../api";
import type { SectionView, ViewContext } from "../../app";
import { el } from "../../dom";
import { layout } from "./layout";
import { listItems } from "./list";
import { inviteNodes, noticeNodes } from "./notices";
import { drawRow } from "./row";
import { Transcript } from "./transcript";
import { VirtualList, type VirtualOptions } from "./virtual-list";
import { rawWords, stateLine } from "./words";

// ConversationsBackend is what the section needs from Go: fronts.Conversations
// (api.conversations, or a test's fake).
export type ConversationsBackend = ConversationsAPI;

export interface ConversationsOptions {
  // requireTrusted makes Accept ignore clicks no user made (synthetic events). Tests in jsdom
  // turn it off; the window keeps it on.
  requireTrusted?: boolean;
  virtual?: VirtualOptions;
  pageSize?: number;
}

export function conversationsView(backend: ConversationsBackend, opts: ConversationsOptions = {}): SectionView {
  const requireTrusted = opts.requireTrusted ?? true;
  const pageSize = opts.pageSize ?? 2000;
  return (host: HTMLElement, ctx: ViewContext) => {
    let companies: ConversationCompany[] = [];
    let company = "";
    let openId = "";
    let state: ConversationState | null = null;
    let transcript = new Transcript("");
    let alive = true;

    const ui = layout();
    const { problem, select, list, startText, startBtn, pane, placeholder, title, topic, kindLine, status, handoff, close, invite, notice, input, send } = ui;
    host.replaceChildren(problem, ui.root);

    const vlist = new VirtualList(ui.scroller, (r) => drawRow(r, () => ctx.show("approvals")), opts.virtual);

    const companyName = (id: string) => companies.find((c) => c.identifier === id)?.name ?? id;
    const fail = (what: string) => (err: unknown) => {
      problem.textContent = `${what}: ${describeError(err)}`;
      problem.hidden = false;
    };
    const ok = () => {
      problem.hidden = true;
      problem.textContent = "";
    };

    // ---- the conversation list ----
    let listBusy = false;
    let listAgain = false;
    async function refreshList(): Promise<void> {
      if (!company) return;
      if (listBusy) {
        listAgain = true;
        return;
      }
      listBusy = true;
      try {
        const items = (await backend.list(company)) ?? [];
        if (!alive) return;
        list.replaceChildren(...listItems(items, openId, companyName(company), (id) => void openConversation(id)));
      } catch (err) {
        fail("Could not read the conversations")(err);
      } finally {
        listBusy = false;
        if (listAgain) {
          listAgain = false;
          void refreshList();
        }
      }
    }

    // ---- the open conversation ----
    function renderState(): void {
      if (!state) return;
      const s = state;
      const co = companyName(s.company);
      // The heading names who talks; the opening words stay words, on one line under it.
      title.textContent = s.direct ? `Direct Conversation with ${co}` : `Conversation with ${co}`;
      topic.textContent = s.title ? `Started with: “${s.title}”` : "";
      topic.title = s.title || "";
      kindLine.textContent = s.direct
        ? `You talk with ${co} yourself here: what you type is sent as your own words.`
        : `Your agent talks with ${co} here; you can write too, as yourself.`;
      status.textContent = stateLine(s, co) + rawWords(s);
      status.dataset.status = s.status;
      status.dataset.responder = s.responder;
      const closed = s.status === "closed";
      handoff.disabled = closed || s.status === "queued" || s.responder !== "agent" || !!s.directOpen;
      close.disabled = closed;
      input.disabled = closed || !!s.directOpen;
      send.disabled = closed || !!s.directOpen;
      input.placeholder = closed ? "This conversation is closed." : `Write to ${co}…`;
      // The Company's request to talk with the user (spec 8.10).
      const inv = (s.invites ?? [])[0];
      if (inv && !closed) {
        const parent = s.id;
        invite.replaceChildren(
          inviteNodes(inv, co, {
            trusted: (ev) => !requireTrusted || ev.isTrusted,
            accept: () =>
              backend.acceptUserRequest(state?.company ?? company, parent, inv.eventId).then((d) => {
                ok();
                void openConversation(d.id);
                void refreshList();
              }, fail("Could not accept")),
            decline: () =>
              backend.declineUserRequest(state?.company ?? company, parent, inv.eventId).then((d) => {
                ok();
                applyState(d);
              }, fail("Could not decline")),
          }),
        );
        invite.hidden = false;
      } else {
        invite.hidden = true;
        invite.replaceChildren();
      }
      const notes = noticeNodes(s, co, { show: (id) => ctx.show(id), open: (id) => void openConversation(id) });
      notice.replaceChildren(...notes);
      notice.hidden = notes.length === 0;
    }

    function applyState(s: ConversationState): void {
      if (s.id !== openId) return;
      state = s;
      for (const w of s.writing ?? []) transcript.delta(w.messageId, w.text);
      renderState();
    }

    let loadBusy = false;
    let loadAgain = false;
    // load reads the state and the entries not yet shown.
    async function load(): Promise<void> {
      if (!openId) return;
      if (loadBusy) {
        loadAgain = true;
        return;
      }
      loadBusy = true;
      const id = openId;
      try {
        const s = await backend.state(company, id);
        if (!alive || id !== openId) return;
        let added = false;
        while (transcript.entries.length < s.total) {
          const page = await backend.entries(company, id, transcript.entries.length, pageSize);
          if (!alive || id !== openId) return;
          const es = page.entries ?? [];
          if (es.length === 0) break;
          transcript.add(es);
          added = true;
        }
        applyState(s);
        if (added || (s.writing ?? []).length > 0) vlist.setRows(transcript.rows(), vlist.atBottom());
      } catch (err) {
        fail("Could not read the conversation")(err);
      } finally {
        loadBusy = false;
        if (loadAgain) {
          loadAgain = false;
          void load();
        }
      }
    }

    async function openConversation(id: string): Promise<void> {
      openId = id;
      state = null;
      transcript = new Transcript(companyName(company));
      vlist.setRows([], false);
      pane.hidden = false;
      placeholder.hidden = true;
      try {
        const s = await backend.open(company, id);
        if (!alive || id !== openId) return;
        state = s;
        renderState();
        await load();
        vlist.toBottom();
        void refreshList();
      } catch (err) {
        fail("Could not open the conversation")(err);
      }
    }

    function showPlaceholder(text: string): void {
      pane.hidden = true;
      placeholder.hidden = false;
      placeholder.replaceChildren(el("p", {}, text));
    }

    // ---- actions ----
    startBtn.addEventListener("click", () => {
      const text = startText.value;
      if (!company || !text.trim()) return;
      startBtn.disabled = true;
      backend.start(company, text).then(
        (s) => {
          ok();
          startText.value = "";
          startBtn.disabled = false;
          void openConversation(s.id);
          void refreshList();
        },
        (err) => {
          startBtn.disabled = false;
          fail("Could not start the conversation")(err);
        },
      );
    });
    const doSend = () => {
      const text = input.value;
      if (!openId || !text.trim()) return;
      const id = openId;
      send.disabled = true;
      backend.send(company, id, text).then(
        (s) => {
          ok();
          input.value = "";
          send.disabled = false;
          applyState(s);
          void load();
        },
        (err) => {
          send.disabled = false;
          fail("Could not send the message")(err);
        },
      );
    };
    send.addEventListener("click", doSend);
    input.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
        ev.preventDefault();
        doSend();
      }
    });
    handoff.addEventListener("click", () => {
      if (!openId) return;
      handoff.disabled = true;
      backend.handoff(company, openId).then((s) => {
        ok();
        applyState(s);
        void load();
      }, fail("Could not hand off"));
    });
    close.addEventListener("click", () => {
      if (!openId) return;
      close.disabled = true;
      backend.close(company, openId).then((s) => {
        ok();
        applyState(s);
        void refreshList();
      }, fail("Could not close the conversation"));
    });
    select.addEventListener("change", () => {
      company = select.value;
      openId = "";
      showPlaceholder("Choose a conversation, or start one.");
      void refreshList();
    });

    // ---- live changes ----
    let listTimer: ReturnType<typeof setTimeout> | undefined;
    const off = backend.on(EVENTS.conversationsChanged, (ch) => {
      if (!ch || ch.company !== company) return;
      if (ch.conversationId === openId) {
        if (ch.kind === "delta") {
          if (transcript.delta(ch.messageId ?? "", ch.text ?? "")) vlist.setRows(transcript.rows(), vlist.atBottom());
          return;
        }
        if (ch.kind === "drop_deltas") {
          transcript.dropDeltas();
          vlist.setRows(transcript.rows(), vlist.atBottom());
          return;
        }
        void load();
      }
      if (ch.kind === "delta") return;
      if (listTimer === undefined) {
        listTimer = setTimeout(() => {
          listTimer = undefined;
          void refreshList();
        }, 150);
      }
    });

    // ---- start ----
    showPlaceholder("Loading…");
    Promise.all([backend.status(), backend.companies()]).then(
      ([st, cos]) => {
        if (!alive) return;
        companies = cos ?? [];
        select.replaceChildren(...companies.map((c) => el("option", { value: c.identifier }, c.name)));
        if (!st.available || companies.length === 0) {
          // Nothing to talk with (yet): the section's empty state, and why when Go said.
          problem.textContent = st.available ? "" : st.problem;
          problem.hidden = st.available;
          host.replaceChildren(problem, ctx.empty());
          return;
        }
        company = companies[0].identifier;
        select.value = company;
        showPlaceholder("Choose a conversation, or start one.");
        void refreshList();
      },
      (err) => {
        // Go could not say (the state database could not be read, or the service is not bound
        // in this window): the empty state, and why.
        if (!alive) return;
        fail("Conversations are unavailable")(err);
        host.replaceChildren(problem, ctx.empty());
      },
    );

    return () => {
      alive = false;
      off();
      if (listTimer !== undefined) clearTimeout(listTimer);
    };
  };
}
