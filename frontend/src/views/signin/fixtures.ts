// Test fixtures of the Sign-in section (and the Companies section, which hands over to it): a
// Company and a plan as fronts.SignIn sends them, a fake fronts.SignIn, and the section's context.

import { vi } from "vitest";
import type { FlowView, ModelRequest, SignInPlan } from "../../api";
import { FakeEvents } from "../../api/testing";
import type { ViewContext } from "../../app";
import type { SignInBackend } from "./screen";

export const company = {
  identifier: "https://auth.shop.localhost:8443",
  name: "Shop <b>bold</b>",
  domain: "shop.localhost:8443",
  issuer: "https://auth.shop.localhost:8443",
  logo: "",
  signIn: { offered: true, disabled: false, direct: true, device: true },
};

export const plan: SignInPlan = {
  company,
  account: "personal",
  accounts: [],
  scopes: [
    { name: "orders:read", description: "See your orders", changes: "none", personal_data: true, hinted: true, held: false, checked: true, requested: true },
    { name: "orders:write", description: "Change orders", changes: "irreversible", personal_data: true, hinted: true, held: false, checked: false, requested: false },
    { name: "future", description: "Something new", changes: "catastrophic", personal_data: false, hinted: true, held: false, checked: false, requested: false },
    { name: "bare", description: "", changes: "irreversible", personal_data: true, hinted: false, held: false, checked: false, requested: false },
  ],
  request: { id: "signin_1", company: company.identifier, name: "Shop", domain: company.domain, scopes: ["orders:read"], modelReason: "<img src=x> I need to see your orders", poppydeskReason: "", requested: "", scopeWords: { "orders:read": "See your orders" } },
};

export class FakeSignIn extends FakeEvents implements SignInBackend {
  started: { kind: string; scopes: string[]; request: string }[] = [];
  reqs: ModelRequest[] = [];
  // waiting is the flow a sign-in starts: Direct Sign-In, waiting for the browser.
  waiting: FlowView = {
    id: "flow_1",
    kind: "direct",
    state: "waiting",
    company,
    account: "personal",
    requested: plan.scopes,
    deadline: "",
    remainingSeconds: 600,
    url: "https://auth.shop.localhost:8443/oauth/authorize?x=1",
  };
  plan = () => Promise.resolve(structuredClone(plan));
  startDirect = (_c: string, _a: string, scopes: string[], request: string) => {
    this.started.push({ kind: "direct", scopes, request });
    return Promise.resolve({ ...this.waiting });
  };
  startDevice = (_c: string, _a: string, scopes: string[], request: string) => {
    this.started.push({ kind: "device", scopes, request });
    return Promise.resolve({
      ...this.waiting,
      kind: "device",
      device: { organization: "Shop", domain: company.domain, verificationUri: "https://auth.shop.localhost:8443/device", verificationUriComplete: "https://auth.shop.localhost:8443/device?user_code=BCDF-GHJK", userCode: "BCDF-GHJK", qr: "data:image/png;base64,AAAA", intervalSeconds: 5 },
    });
  };
  cancel = vi.fn(() => Promise.resolve());
  // Go's Current answers an empty view when no sign-in runs.
  current = () => Promise.resolve<FlowView>({ ...this.waiting, id: "", state: "" });
  flow = (id: string) => Promise.resolve<FlowView>({ ...this.waiting, id });
  requests = () => Promise.resolve(this.reqs);
  dismissRequest = vi.fn(() => Promise.resolve());
}

export function context(shown: string[]): ViewContext {
  return {
    doc: document,
    setStatus: () => {},
    setBadge: () => {},
    show: (id) => shown.push(id),
    empty: () => {
      const e = document.createElement("section");
      e.id = "empty-state";
      e.textContent = "No sign-in in progress";
      return e;
    },
  };
}

export const flush = () => new Promise((r) => setTimeout(r, 0));

