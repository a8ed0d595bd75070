// The side bar's list of a Company's conversations, the open one marked.

import type { ConversationState } from "../../api";
import { el } from "../../dom";
import { stateLine } from "./words";

// listItems builds the list's items; companyName is the Company's verified name.
export function listItems(items: ConversationState[], openId: string, companyName: string, open: (id: string) => void): HTMLLIElement[] {
  if (items.length === 0) return [el("li", { class: "conv-none" }, "No conversations with this Company yet.")];
  return items.map((c) => {
    const b = el(
      "button",
      { type: "button", class: "conv-item", "data-id": c.id, "aria-current": c.id === openId ? "true" : undefined },
      el("span", { class: "conv-item-title" }, c.direct ? `Direct: ${c.title || "you and the Company"}` : c.title || c.id),
      el("span", { class: "conv-item-status" }, stateLine(c, companyName)),
    );
    b.addEventListener("click", () => open(c.id));
    return el("li", {}, b);
  });
}
