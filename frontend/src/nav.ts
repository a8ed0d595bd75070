// Keyboard logic of the navigation rail: a roving tabindex (one Tab stop for the whole rail),
// Up/Down (and Left/Right) move between entries and wrap, Home/End jump to the ends, Enter or
// Space open the focused section.

export type NavMove = { kind: "focus"; index: number } | { kind: "activate"; index: number } | null;

export function navKey(key: string, current: number, count: number): NavMove {
  if (count <= 0) return null;
  switch (key) {
    case "ArrowDown":
    case "ArrowRight":
      return { kind: "focus", index: (current + 1) % count };
    case "ArrowUp":
    case "ArrowLeft":
      return { kind: "focus", index: (current - 1 + count) % count };
    case "Home":
      return { kind: "focus", index: 0 };
    case "End":
      return { kind: "focus", index: count - 1 };
    case "Enter":
    case " ":
    case "Spacebar":
      return { kind: "activate", index: current };
    default:
      return null;
  }
}
