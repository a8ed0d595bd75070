// What the window finds on `window`: the bound Go services (window.go.fronts.<Service>.<Method>,
// defined by Wails in the desktop window and by the shim of app/webbridge in the
// browser-testable mode) and the runtime's events and window functions. The services' types are
// those of the generated bindings in wailsjs/go/fronts/.

import type * as Activity from "../../wailsjs/go/fronts/Activity";
import type * as Approvals from "../../wailsjs/go/fronts/Approvals";
import type * as Browser from "../../wailsjs/go/fronts/Browser";
import type * as Companies from "../../wailsjs/go/fronts/Companies";
import type * as Conversations from "../../wailsjs/go/fronts/Conversations";
import type * as Shell from "../../wailsjs/go/fronts/Shell";
import type * as Inspector from "../../wailsjs/go/fronts/Inspector";
import type * as Settings from "../../wailsjs/go/fronts/Settings";
import type * as SignIn from "../../wailsjs/go/fronts/SignIn";
import { EVENTS } from "./events";

// GoServices are the structs app/fronts binds to the window, by name.
export interface GoServices {
  Shell: typeof Shell;
  Approvals: typeof Approvals;
  SignIn: typeof SignIn;
  Companies: typeof Companies;
  Conversations: typeof Conversations;
  Browser: typeof Browser;
  Activity: typeof Activity;
  Inspector: typeof Inspector;
  Settings: typeof Settings;
}
export type ServiceName = keyof GoServices;

// The part of the Wails runtime the window uses. EventsOnMultiple is declared as Wails declares
// it (wailsjs/runtime/runtime.d.ts): the runtime calls a listener with the JSON values Go
// emitted, unchecked. What each event carries is declared once, in events.ts, and only onEvent
// calls this.
export interface WailsRuntime {
  EventsOnMultiple(name: string, cb: (...data: any[]) => void, max: number): (() => void) | void;
  EventsEmit?: (name: string, ...data: unknown[]) => void;
  Quit?: () => void;
}

declare global {
  interface Window {
    // A window may bind only some services (a test page binding only the shell, an older core),
    // so each service, and each method, may be missing.
    go?: { fronts?: { [S in ServiceName]?: Partial<GoServices[S]> } };
    runtime?: WailsRuntime;
  }
}

// isBound says whether the service is bound to this window.
export function isBound(service: ServiceName): boolean {
  return !!window.go?.fronts?.[service];
}

// call runs f, a call of the generated binding of service. It rejects, rather than throws, when
// the service is not bound or the binding throws, so every caller handles one kind of failure.
export function call<T>(service: ServiceName, f: () => Promise<T>): Promise<T> {
  if (!isBound(service)) return Promise.reject(new Error(`the ${service} service is not bound in this window`));
  try {
    return f();
  } catch (err) {
    return Promise.reject(err);
  }
}

// quitWindow closes the desktop window as its close button does (Go asks first while approvals
// wait); the browser-testable bridge has no such call, so it does nothing there.
export function quitWindow(): void {
  window.runtime?.Quit?.();
}

// confirmClose tells Go that the user chose to close the window although approvals wait.
export function confirmClose(): void {
  window.runtime?.EventsEmit?.(EVENTS.windowCloseConfirmed);
}
