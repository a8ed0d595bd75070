// The Company as discovery verified it: the header every Sign-in screen starts with (name,
// domain, and the logo Poppydesk fetched itself as a data: URL, or a placeholder), and the
// sign-in types it offers in words.

import type { CompanyCard, SignInOffer } from "../../api";
import { el } from "../../dom";

export function companyHeader(c: CompanyCard): HTMLElement {
  const logo = c.logo.startsWith("data:image/")
    ? el("img", { class: "si-logo", src: c.logo, alt: `${c.name} logo`, width: 48, height: 48 })
    : el("div", { class: "si-logo si-logo-placeholder", "aria-hidden": "true" }, (c.name.trim()[0] ?? "?").toUpperCase());
  return el(
    "div",
    { class: "si-company" },
    logo,
    el(
      "div",
      { class: "si-company-text" },
      el("h2", { class: "si-company-name", id: "si-company-name" }, c.name),
      el("p", { class: "si-company-domain mono", id: "si-company-domain" }, c.domain),
      el("p", { class: "muted si-verified" }, `Name and domain verified by discovery (https://${c.domain}/.well-known/poppy.json). Identifier: ${c.identifier}`),
    ),
  );
}

// offeredWords says which sign-in types the Company offers Personal Agents (spec 3.2, 4).
export function offeredWords(o: SignInOffer): string {
  if (o.disabled) return "This Company has turned sign-in off for Personal Agents for now.";
  if (!o.offered || (!o.direct && !o.device)) return "This Company offers no sign-in to Personal Agents; your agent works signed out there.";
  const kinds = [o.direct ? "sign-in in your browser" : "", o.device ? "sign-in on another device" : ""].filter(Boolean);
  return `This Company offers ${kinds.join(" and ")}.`;
}
