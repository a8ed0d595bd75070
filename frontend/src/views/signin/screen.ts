// What each Sign-in screen (home, plan, flow) gets from the view: Go, the section's context, and
// the ways to replace the screen or move to another one.

import type { SignInAPI, FlowView } from "../../api";
import type { ViewContext } from "../../app";

// SignInBackend is what the Sign-in section needs from Go: fronts.SignIn (api.signIn, or a test's
// fake).
export type SignInBackend = SignInAPI;

export interface Screen {
  readonly backend: SignInBackend;
  readonly ctx: ViewContext;
  // now is the clock in milliseconds (the countdown).
  now(): number;
  // gone says the user has left the section: a late answer from Go shows nothing.
  gone(): boolean;
  // put replaces the screen with nodes (and stops the countdown of the previous one).
  put(...nodes: Node[]): void;
  // every runs f every ms milliseconds until the next put.
  every(ms: number, f: () => void): void;
  // trusted says whether ev is a user's gesture (always, when the view does not require trust).
  trusted(ev: Event): boolean;
  // problem is the alert paragraph for text.
  problem(text: string): HTMLElement;
  home(): Promise<void>;
  plan(company: string, account: string, requestId: string): Promise<void>;
  flow(f: FlowView): void;
}
