// The window's view of the Go services. In the desktop window the generated Wails bindings reach
// Go through the Wails runtime; in the browser-testable mode the bridge's shim defines the same
// window.go and window.runtime objects, so this file does not know which mode it runs in.

import { FrontendReady, Info, Sections, Status } from "../wailsjs/go/app/Shell";
import type { app } from "../wailsjs/go/models";

export type AppInfo = app.AppInfo;
export type Section = app.Section;

// Event names, as in app/shell.go.
export const EVENT_STATUS = "shell:status";
export const EVENT_SECTIONS = "shell:sections";

export interface Backend {
  info(): Promise<AppInfo>;
  sections(): Promise<Section[]>;
  status(): Promise<string>;
  // frontendReady reports that the window has shown its first data.
  frontendReady(): Promise<void>;
  on(event: string, cb: (...data: unknown[]) => void): () => void;
}

interface RuntimeEvents {
  EventsOnMultiple(name: string, cb: (...data: unknown[]) => void, max: number): (() => void) | void;
}

declare global {
  interface Window {
    runtime?: RuntimeEvents;
  }
}

export const goBackend: Backend = {
  info: () => Info(),
  sections: () => Sections(),
  status: () => Status(),
  frontendReady: () => FrontendReady(),
  on(event, cb) {
    const off = window.runtime?.EventsOnMultiple(event, cb, -1);
    return typeof off === "function" ? off : () => {};
  },
};
