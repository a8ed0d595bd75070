import { describe, expect, it, vi } from "vitest";
import type { InspectorEntry, InspectorResend } from "../../api";
import { headerLines, parseHeaderLines, resendForm } from "./resend";

const entry = {
  row: { id: 7, method: "POST", url: "https://shop.localhost/api/x", sid: "s1" },
  request_headers: [
    { name: "Authorization", value: "[redacted]" },
    { name: "Content-Type", value: "application/json" },
    { name: "Dpop", value: "[redacted]" },
    { name: "Poppy-Session", value: "[redacted]" },
    { name: "Poppy-Version", value: "0.4" },
    { name: "Idempotency-Key", value: "k1" },
  ],
  request_body: '{"n":1}',
} as unknown as InspectorEntry;

describe("edit and resend", () => {
  it("offers every header but those the pipeline makes anew", () => {
    expect(headerLines(entry.request_headers)).toBe("Content-Type: application/json\nIdempotency-Key: k1");
  });

  it("reads header lines and says which line is not one", () => {
    expect(parseHeaderLines("A: 1\n\n B:2:3 ")).toEqual([
      { name: "A", value: "1" },
      { name: "B", value: "2:3" },
    ]);
    expect(() => parseHeaderLines("A: 1\nnot a header")).toThrow(/line 2/);
  });

  it("sends the edit and shows Go's refusal in words", async () => {
    const sent: InspectorResend[] = [];
    const backend = { resend: vi.fn((r: InspectorResend) => (sent.push(r), Promise.reject(new Error("developer mode is off")))) };
    const form = resendForm(backend, entry, () => {});
    document.body.append(form);
    form.querySelector<HTMLTextAreaElement>("#insp-rs-body")!.value = '{"n":2}';
    form.querySelector<HTMLButtonElement>("#insp-rs-send")!.click();
    await new Promise((r) => setTimeout(r, 0));
    expect(sent[0]).toMatchObject({ of: 7, method: "POST", url: "https://shop.localhost/api/x", body: '{"n":2}' });
    expect((sent[0].headers ?? []).map((h) => h.name)).toEqual(["Content-Type", "Idempotency-Key"]);
    expect(form.querySelector("#insp-rs-error")!.textContent).toContain("developer mode is off");
    form.remove();
  });
});
