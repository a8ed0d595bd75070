import { afterEach, describe, expect, it, vi } from "vitest";
import * as ActivityGo from "../../wailsjs/go/fronts/Activity";
import * as ApprovalsGo from "../../wailsjs/go/fronts/Approvals";
import * as BrowserGo from "../../wailsjs/go/fronts/Browser";
import * as CompaniesGo from "../../wailsjs/go/fronts/Companies";
import * as ConversationsGo from "../../wailsjs/go/fronts/Conversations";
import * as ShellGo from "../../wailsjs/go/fronts/Shell";
import * as SignInGo from "../../wailsjs/go/fronts/SignIn";
import { fronts } from "../../wailsjs/go/models";
import { describeError } from "./errors";
import { onEvent } from "./events";
import type { ServiceName } from "./runtime";
import * as api from "./services";

afterEach(() => {
  delete window.go;
});

describe("a bound call", () => {
  it("goes to window.go.fronts.<Service>.<Method> with its arguments and gives back Go's data", async () => {
    const item = fronts.ApprovalItem.createFrom({ id: "apr_1", companyName: "Poppy Outfitters", current: { revision: "r1", terms: [] }, warnings: null });
    const Get = vi.fn((id: string) => Promise.resolve(id === "apr_1" ? item : fronts.ApprovalItem.createFrom({})));
    const Approve = vi.fn(() => Promise.resolve(fronts.Outcome.createFrom({ status: "succeeded" })));
    window.go = { fronts: { Approvals: { Get, Approve } } };
    const got = await api.approvals.get("apr_1");
    expect(Get).toHaveBeenCalledWith("apr_1");
    expect(got.companyName).toBe("Poppy Outfitters");
    expect(got.current.revision).toBe("r1");
    expect(got.warnings).toBeNull();
    await expect(api.approvals.approve("apr_1", "r1", "digest")).resolves.toMatchObject({ status: "succeeded" });
    expect(Approve).toHaveBeenCalledWith("apr_1", "r1", "digest");
  });

  it("rejects with Go's words when Go returns an error", async () => {
    window.go = { fronts: { Companies: { Discover: () => Promise.reject("discovery failed: spec 3") } } };
    await expect(api.companies.discover("bad.example").catch(describeError)).resolves.toBe("discovery failed: spec 3");
  });

  it("rejects, never throws, when the service is not bound or its binding throws", async () => {
    window.go = { fronts: { Shell: {} } };
    const unbound = api.conversations.status();
    expect(unbound).toBeInstanceOf(Promise);
    await expect(unbound.catch(describeError)).resolves.toBe("the Conversations service is not bound in this window");
    delete window.go;
    await expect(api.shell.info().catch(describeError)).resolves.toBe("the Shell service is not bound in this window");
    // A service bound without the method (an older core): the generated binding throws.
    window.go = { fronts: { SignIn: {} } };
    await expect(api.signIn.flow("flow_1")).rejects.toBeInstanceOf(TypeError);
  });

  it("shows a window without fronts.Approvals the plain empty state", async () => {
    window.go = { fronts: { Shell: {} } };
    await expect(api.approvals.status()).resolves.toEqual({ available: false, problem: "", demo: false, demoCompany: "" });
    await expect(api.approvals.list()).resolves.toEqual([]);
  });
});

// Every method of every generated binding, with the api object that must wrap it.
const services: [ServiceName, Record<string, unknown>, Record<string, unknown>][] = [
  ["Shell", ShellGo, api.shell],
  ["Approvals", ApprovalsGo, api.approvals],
  ["SignIn", SignInGo, api.signIn],
  ["Companies", CompaniesGo, api.companies],
  ["Conversations", ConversationsGo, api.conversations],
  ["Browser", BrowserGo, api.browser],
  ["Activity", ActivityGo, api.activity],
];

describe("the api objects", () => {
  it.each(services)("wrap every method of fronts.%s, each routed to its Go method", async (name, generated, wrapper) => {
    const methods = Object.keys(generated);
    expect(methods.length).toBeGreaterThan(0);
    for (const method of methods) {
      const mock = vi.fn((...args: unknown[]) => Promise.resolve({ method, args }));
      window.go = { fronts: { [name]: { [method]: mock } } };
      const f = wrapper[method.charAt(0).toLowerCase() + method.slice(1)];
      expect(typeof f, `${name}.${method}`).toBe("function");
      if (typeof f !== "function") continue;
      const args = ["a", "b", ["c"], "d"].slice(0, f.length);
      await expect(f(...args), `${name}.${method}`).resolves.toEqual({ method, args });
      expect(mock).toHaveBeenCalledTimes(1);
    }
    // Plus the one event subscription; nothing else.
    expect(wrapper.on).toBe(onEvent);
    expect(Object.keys(wrapper).length).toBe(methods.length + 1);
  });
});
