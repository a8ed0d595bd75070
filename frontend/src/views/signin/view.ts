// The Sign-in section (spec 4.2 Direct Sign-In, 4.3 Device Sign-In, 4.7 scopes and hints;
// docs/DESIGN.md invariant 1: a sign-in starts only from a user gesture in this window).
//
// The screens show the Company's verified name, domain and logo (from discovery; the logo is a
// data: URL Poppydesk fetched itself, or a placeholder), the scopes with the Company's
// descriptions and hints, the sign-in types the Company offers, and a checkbox per scope.
// Requests from the model appear with its stated reason marked as the model's words ("Your agent
// says: …"); nothing here starts a sign-in except the two buttons of the plan, which ignore
// synthetic clicks. Every text is set with textContent (dom.ts).
//
// This file holds the section's state and switches between its screens: home (the model's
// requests), plan (before the user decides) and flow (a sign-in in progress, or its outcome).

import { EVENTS } from "../../api";
import type { SectionView, ViewContext } from "../../app";
import { el } from "../../dom";
import { showFlow } from "./flow";
import { takeHandover } from "./handover";
import { showHome } from "./home";
import { showPlan } from "./plan";
import type { Screen, SignInBackend } from "./screen";

export interface SignInOptions {
  // now is the clock in milliseconds (the countdown).
  now?: () => number;
  // requireTrusted makes the sign-in buttons ignore clicks no user made. jsdom tests turn it off.
  requireTrusted?: boolean;
}

export function signInView(backend: SignInBackend, opts: SignInOptions = {}): SectionView {
  const now = opts.now ?? (() => Date.now());
  const requireTrusted = opts.requireTrusted ?? true;

  return (host: HTMLElement, ctx: ViewContext) => {
    let timer: ReturnType<typeof setInterval> | undefined;
    let gone = false;
    // shownFlow is the flow on screen: its events update it.
    let shownFlow = "";

    const stopTimer = (): void => {
      if (timer !== undefined) clearInterval(timer);
      timer = undefined;
    };
    const screen: Screen = {
      backend,
      ctx,
      now,
      gone: () => gone,
      put: (...nodes) => {
        stopTimer();
        host.replaceChildren(...nodes);
      },
      every: (ms, f) => {
        timer = setInterval(f, ms);
      },
      trusted: (ev) => !requireTrusted || ev.isTrusted,
      problem: (text) => el("p", { class: "si-error", role: "alert", id: "si-error" }, text),
      home: () => showHome(screen),
      plan: (company, account, requestId) => showPlan(screen, company, account, requestId),
      flow: (f) => {
        if (gone) return;
        shownFlow = f.id;
        showFlow(screen, f);
      },
    };

    const offs = [
      backend.on(EVENTS.signInFlow, (f) => {
        if (f && f.id && f.id === shownFlow) screen.flow(f);
      }),
      backend.on(EVENTS.signInRequests, () => {
        if (!shownFlow && !host.querySelector("#si-plan")) void screen.home();
      }),
    ];

    const sel = takeHandover();
    if (sel) {
      void screen.plan(sel.company, "", sel.requestId);
    } else {
      backend.current().then(
        (f) => {
          if (f && f.id && f.state === "waiting") screen.flow(f);
          else void screen.home();
        },
        () => void screen.home(),
      );
    }
    return () => {
      gone = true;
      stopTimer();
      offs.forEach((off) => off());
    };
  };
}
