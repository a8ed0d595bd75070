// The Company (and model request) the Companies section hands over to the Sign-in section
// with its "Sign in…" button.

import type { ViewContext } from "../../app";

export interface Handover {
  company: string;
  requestId: string;
}

let pending: Handover | null = null;

// openSignIn shows the Sign-in section for company (from a "Sign in…" button).
export function openSignIn(ctx: ViewContext, company: string, requestId = ""): void {
  pending = { company, requestId };
  ctx.show("signin");
}

// takeHandover returns the Company handed over, once.
export function takeHandover(): Handover | null {
  const sel = pending;
  pending = null;
  return sel;
}
