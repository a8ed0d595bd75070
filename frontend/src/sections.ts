// The window's sections, in navigation order, with the empty state each shows until the engine
// has something to put there. The IDs match fronts.Section IDs on the Go side.

export interface SectionDef {
  id: string;
  title: string;
  // emptyTitle and emptyText say in plain words what will appear in the section.
  emptyTitle: string;
  emptyText: string;
  icon: readonly string[];
}

export const SECTIONS: readonly SectionDef[] = [
  {
    id: "approvals",
    title: "Approvals",
    emptyTitle: "Nothing is waiting for your approval",
    emptyText:
      "When your agent asks a Company to do something that needs your consent, the request appears here with the Company’s verified name, the exact terms, and what changed since the last version. Nothing happens until you choose Approve or Decline.",
    icon: ["M9 12l2 2 4-4", "M12 3l7 3v6c0 4.5-3 8-7 9-4-1-7-4.5-7-9V6z"],
  },
  {
    id: "companies",
    title: "Companies",
    emptyTitle: "No Companies yet",
    emptyText:
      "Companies your agent discovers or that you add appear here, each under the name its domain verifies, with the services it offers and whether you are signed in.",
    icon: ["M4 21V8l8-5 8 5v13", "M9 21v-6h6v6", "M3 21h18"],
  },
  {
    id: "signin",
    title: "Sign-in",
    emptyTitle: "No sign-in in progress",
    emptyText:
      "When you sign in to a Company, this is where you confirm it: Direct Sign-In opens your own browser, and Device Sign-In shows a link, a code and a QR code, together with the permissions the Company asks for.",
    icon: ["M15 3h4a2 2 0 0 1 2 2v14a2 2 0 0 1-2 2h-4", "M10 17l5-5-5-5", "M15 12H3"],
  },
  {
    id: "conversations",
    title: "Conversations",
    emptyTitle: "No conversations yet",
    emptyText:
      "Messages between your agent and the agents of Companies appear here as plain text, so you can read what was said on your behalf.",
    icon: ["M21 15a2 2 0 0 1-2 2H8l-5 4V5a2 2 0 0 1 2-2h14a2 2 0 0 1 2 2z"],
  },
  {
    id: "browser",
    title: "Browser",
    emptyTitle: "The controlled browser is closed",
    emptyText:
      "When your agent visits a Company’s website, it uses a separate browser that Poppydesk controls. The page it sees appears here. It never uses your own browser or its cookies.",
    icon: ["M3 5h18v14H3z", "M3 9h18", "M6 7h.01", "M9 7h.01"],
  },
  {
    id: "inspector",
    title: "Inspector",
    emptyTitle: "Nothing recorded yet",
    emptyText:
      "Every exchange with a Company appears here on a timeline, with decoded tokens (secrets hidden) and findings that name the section of the specification a response breaks.",
    icon: ["M11 4a7 7 0 1 0 0 14 7 7 0 0 0 0-14z", "M21 21l-5-5"],
  },
  {
    id: "settings",
    title: "Settings",
    emptyTitle: "Settings are loading",
    emptyText: "The window’s appearance and notifications appear here, with where Poppydesk keeps its files and whether it can reach the system keyring.",
    icon: [
      "M12 9a3 3 0 1 0 0 6 3 3 0 0 0 0-6z",
      "M19.4 15a1.7 1.7 0 0 0 .3 1.8l.1.1a2 2 0 1 1-2.8 2.8l-.1-.1a1.7 1.7 0 0 0-1.8-.3 1.7 1.7 0 0 0-1 1.5V21a2 2 0 1 1-4 0v-.1a1.7 1.7 0 0 0-1.1-1.5 1.7 1.7 0 0 0-1.8.3l-.1.1a2 2 0 1 1-2.8-2.8l.1-.1a1.7 1.7 0 0 0 .3-1.8 1.7 1.7 0 0 0-1.5-1H3a2 2 0 1 1 0-4h.1a1.7 1.7 0 0 0 1.5-1.1 1.7 1.7 0 0 0-.3-1.8l-.1-.1a2 2 0 1 1 2.8-2.8l.1.1a1.7 1.7 0 0 0 1.8.3H9a1.7 1.7 0 0 0 1-1.5V3a2 2 0 1 1 4 0v.1a1.7 1.7 0 0 0 1 1.5 1.7 1.7 0 0 0 1.8-.3l.1-.1a2 2 0 1 1 2.8 2.8l-.1.1a1.7 1.7 0 0 0-.3 1.8V9a1.7 1.7 0 0 0 1.5 1H21a2 2 0 1 1 0 4h-.1a1.7 1.7 0 0 0-1.5 1z",
    ],
  },
];

export const DEFAULT_SECTION = SECTIONS[0].id;

export function sectionById(id: string): SectionDef | undefined {
  return SECTIONS.find((s) => s.id === id);
}

// sectionFromHash maps "#/companies" to "companies"; anything else to the default section.
export function sectionFromHash(hash: string): string {
  const m = /^#\/([a-z]+)$/.exec(hash);
  return m && sectionById(m[1]) ? m[1] : DEFAULT_SECTION;
}
