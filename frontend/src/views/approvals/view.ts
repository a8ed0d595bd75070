// The Approvals section: the list of approvals (list.ts), the dialog (dialog.ts) and, in demo
// mode, the demo card (demo.ts). It listens, for the window's whole life, for new approvals: one
// arriving opens its dialog (switching to the Approvals section if needed) without bringing the
// window forward: while another application has the focus, the user is told by the desktop
// notification, the taskbar's attention request and badge (Go's side, app/host_attention.go),
// and decides when they come to Poppydesk.

import { type ApprovalChange, type ApprovalRow, type ApprovalsAPI, type ApprovalsStatus, EVENTS, describeError } from "../../api";
import type { SectionView, ViewContext } from "../../app";
import { el } from "../../dom";
import { DemoCard, agentRunOf } from "./demo";
import { ApprovalDialog, type DialogOptions } from "./dialog";
import { DialogTrace } from "./latency";
import { approvalGroups } from "./list";

// ApprovalsBackend is what the section needs from Go: fronts.Approvals (api.approvals, or a test's
// fake).
export type ApprovalsBackend = ApprovalsAPI;

export type ApprovalsOptions = DialogOptions;

// FIRST_PAGE is how many decided approvals the list reads when it opens: about three screens of
// rows, so the first screen waits for no more than it shows; EARLIER_PAGE is how many each read
// brings as the list is scrolled.
const FIRST_PAGE = 25;
const EARLIER_PAGE = 50;

const isFresh = (ev: ApprovalChange): boolean => ev.kind === "created" || ev.kind === "revision";

export function approvalsView(backend: ApprovalsBackend, opts: ApprovalsOptions = {}): SectionView {
  let mounted: { refresh: (ev?: ApprovalChange) => void } | null = null;
  let pendingOpen = "";
  let dialog: ApprovalDialog | null = null;
  const trace = new DialogTrace((id, steps) => void backend.dialogShown(id, steps).catch(() => undefined));

  backend.on(EVENTS.approvalsChanged, (data) => {
    const ev: ApprovalChange = data ?? { kind: "", id: "", state: "" };
    const fresh = isFresh(ev);
    if (fresh && ev.id) trace.start(ev.id);
    if (mounted) {
      mounted.refresh(ev);
    } else if (fresh && ev.id) {
      pendingOpen = ev.id;
      const win = document.defaultView;
      if (win) win.location.hash = "#/approvals";
    }
  });

  return (host: HTMLElement, ctx: ViewContext) => {
    // The empty state at once (replaced when the list has loaded), so the section never flashes
    // blank.
    // aria-busy until the first read of the list has ended, for assistive technology.
    const listHost = el("div", { class: "approvals-list", id: "approvals-list", "aria-busy": "true" }, ctx.empty());
    host.append(listHost);
    if (!dialog) dialog = new ApprovalDialog(document, backend, opts);
    const dlg = dialog;
    const demo = new DemoCard(backend);
    let status: ApprovalsStatus = { available: true, problem: "", demo: false, demoCompany: "" };
    let gone = false;

    const openItem = async (id: string) => {
      try {
        trace.mark(id, "get");
        const item = await backend.get(id);
        trace.mark(id, "got");
        if (gone) return;
        if (dlg.isOpen && dlg.current?.id === id) dlg.update(item);
        else dlg.open(item);
        trace.mark(id, "built");
        trace.painted(id, document.defaultView);
      } catch (err) {
        ctx.setStatus(`Could not open the approval: ${describeError(err)}`);
      }
    };
    // After a decision the item is read again: the state changes that came while the decision
    // was in flight were not shown, and the dialog turns into the record.
    dlg.onDecided = () => {
      void load();
      const id = dlg.current?.id;
      if (id) void openItem(id);
    };
    // Closing the dialog reads the list again; the focus goes back to the row it was opened
    // from, drawn again by then (unless the user has put it somewhere else meanwhile).
    dlg.onClosed = () =>
      void load().then(() => {
        const a = document.activeElement;
        if (!dlg.isOpen && (!a || a === document.body)) dlg.restoreFocus();
      });

    // next is the cursor after the earlier items read so far (fronts.Approvals.Earlier).
    let next = "";
    const load = async (): Promise<ApprovalRow[]> => {
      let items: ApprovalRow[] = [];
      try {
        const [listed, page] = await Promise.all([backend.list(), backend.earlier("", FIRST_PAGE)]);
        items = listed ?? [];
        const have = new Set(items.map((i) => i.id));
        for (const it of page.items ?? []) if (!have.has(it.id)) items.push(it);
        next = page.next;
      } catch (err) {
        if (!gone) listHost.replaceChildren(el("p", { class: "result-error", role: "alert" }, `Could not read the approvals: ${describeError(err)}`));
        listHost.removeAttribute("aria-busy");
        return [];
      }
      if (gone) return items;
      ctx.setBadge("approvals", items.filter((i) => i.decidable).length);
      renderList(items);
      listHost.removeAttribute("aria-busy");
      return items;
    };

    const renderList = (items: ApprovalRow[]) => {
      if (items.length === 0) {
        const empty = ctx.empty();
        if (!status.available && status.problem) {
          const p = empty.querySelector(".empty-text");
          if (p) p.textContent = status.problem;
          empty.classList.add("problem");
        }
        const nodes: Node[] = [empty];
        if (status.available && status.demo) nodes.push(demo.card(status.demoCompany));
        listHost.replaceChildren(...nodes);
        return;
      }
      const nodes: Node[] = approvalGroups(items, {
        open: (id) => void openItem(id),
        check: (id) => void openItem(id).then(() => dlg.checkNow()),
        more: (cursor) => backend.earlier(cursor, EARLIER_PAGE),
        next,
      });
      if (status.demo) nodes.push(demo.card(status.demoCompany));
      listHost.replaceChildren(...nodes);
    };

    const offAgent = backend.on(EVENTS.exampleAgent, (data) => {
      if (!gone) demo.show(agentRunOf(data));
    });

    mounted = {
      // The dialog comes first: a new item is read and shown at once, and the list is read
      // again beside it (never before it), so the dialog waits for one call to Go, not two.
      refresh: (ev?: ApprovalChange) => {
        if (ev?.id && !gone) {
          const fresh = isFresh(ev);
          // A new approval opens its own dialog unless another one waits for a decision on
          // screen; a decided record gives way to it.
          if (dlg.isOpen && dlg.current?.id === ev.id) void openItem(ev.id);
          else if (fresh && (!dlg.isOpen || dlg.isRecord)) void openItem(ev.id);
          else if (fresh) ctx.setStatus("Another approval arrived; it is in the Approvals list.");
        }
        void load();
      },
    };

    void backend.status().then(
      (s) => {
        status = s;
        if (s.demo) {
          void backend.exampleAgent().then(
            (r) => {
              if (gone || !r) return;
              demo.show(agentRunOf(r));
            },
            () => undefined,
          );
        }
        return load();
      },
      (err) => {
        ctx.setStatus(`Approvals are unavailable: ${describeError(err)}`);
        return load();
      },
    ).then(() => {
      if (pendingOpen && !gone) {
        const id = pendingOpen;
        pendingOpen = "";
        void openItem(id);
      }
    });

    return () => {
      gone = true;
      mounted = null;
      offAgent();
      dlg.close();
    };
  };
}
