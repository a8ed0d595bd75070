// The Sign-in section's first screen: the model's sign-in requests, each with its reason and
// Review… / Dismiss, or the section's empty state when there is none.

import { type ModelRequest, describeError } from "../../api";
import { append, el } from "../../dom";
import { requestTitle, requestWords } from "./reasons";
import type { Screen } from "./screen";

export async function showHome(s: Screen): Promise<void> {
  let reqs: ModelRequest[] = [];
  let err = "";
  try {
    reqs = (await s.backend.requests()) ?? [];
  } catch (e) {
    err = describeError(e);
  }
  if (s.gone()) return;
  if (reqs.length === 0) {
    const nodes: Node[] = [s.ctx.empty()];
    if (err) nodes.push(s.problem(`Sign-in is unavailable: ${err}`));
    s.put(...nodes);
    return;
  }
  const list = el("ul", { class: "si-requests", id: "si-requests" });
  for (const r of reqs) {
    const review = el("button", { class: "btn btn-primary", type: "button" }, "Review…");
    review.addEventListener("click", () => void s.plan(r.company, "", r.id));
    const dismiss = el("button", { class: "btn", type: "button" }, "Dismiss");
    dismiss.addEventListener("click", () => {
      s.backend.dismissRequest(r.id).then(
        () => void s.home(),
        (e) => s.ctx.setStatus(`Could not dismiss the request: ${describeError(e)}`),
      );
    });
    append(list, [
      el(
        "li",
        { class: "si-card si-request", "data-request": r.id },
        el("h2", {}, requestTitle(r)),
        el("p", { class: "mono" }, r.domain),
        el("p", {}, `Access it asks for: ${(r.scopes ?? []).map((x) => (r.scopeWords?.[x] ? `${r.scopeWords[x]} (${x})` : x)).join(", ") || "none named"}`),
        requestWords(r),
        el("div", { class: "si-actions" }, review, dismiss),
      ),
    ]);
  }
  s.put(el("p", { class: "muted si-intro" }, "Your agent can ask for a sign-in, but only you can start one, here."), list);
}
