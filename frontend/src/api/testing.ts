// Test support (not part of the window's bundle): FakeEvents stands in for the Go events in a
// view's fake backend. A fake service extends it, so it has the same `on` as the api's service
// objects, and a test emits typed data with emit.

import type { EventData, EventName, Listener } from "./events";

export class FakeEvents {
  // One list per event (the compiler checks that none is missing).
  private readonly listeners: { [E in EventName]: Listener<E>[] } = {
    "shell:status": [],
    "shell:sections": [],
    "approvals:changed": [],
    "approvals:example-agent": [],
    "signin:flow": [],
    "signin:requests": [],
    "companies:changed": [],
    "conversations:changed": [],
    "browser:changed": [],
    "activity:changed": [],
    "inspector:changed": [],
    "window:close-requested": [],
    "window:close-confirmed": [],
  };

  on<E extends EventName>(name: E, cb: Listener<E>): () => void {
    const list: Listener<E>[] = this.listeners[name];
    list.push(cb);
    return () => {
      const i = list.indexOf(cb);
      if (i >= 0) list.splice(i, 1);
    };
  }

  // emit calls the listeners of name with data, as the runtime does when Go emits.
  emit<E extends EventName>(name: E, data?: EventData[E]): void {
    const list: Listener<E>[] = this.listeners[name];
    for (const cb of [...list]) cb(data);
  }

  // listening is the number of listeners of name.
  listening(name: EventName): number {
    return this.listeners[name].length;
  }
}
