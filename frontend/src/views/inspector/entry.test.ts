import { describe, expect, it } from "vitest";
import { claimsText } from "./entry";
import { urlParts } from "./timeline";

describe("the Inspector", () => {
  it("shows the time a token's time claims stand for, beside the number", () => {
    const claims = '{\n  "aud": "https://shop.example",\n  "exp": 1791487200,\n  "iat": 1791486900,\n  "jti": "1791487200",\n  "n": 1791487200\n}';
    const out = claimsText(claims);
    const when = new Date(1791487200 * 1000).toLocaleString();
    expect(out).toContain(`"exp": 1791487200,  (${when})`);
    expect(out).toContain(`"iat": 1791486900,  (`);
    // Only the time claims: a string or another number stays as it is.
    expect(out).toContain('"jti": "1791487200",\n');
    expect(out).toContain('"n": 1791487200\n');
  });

  it("splits a URL into its host and its path, so a narrow list shortens the host", () => {
    expect(urlParts("https://api.shop.example:8443/api/orders/ord_7Hk2/exchanges?x=1")).toEqual({ host: "api.shop.example:8443", path: "/api/orders/ord_7Hk2/exchanges?x=1" });
    expect(urlParts("https://shop.example")).toEqual({ host: "shop.example", path: "" });
  });
});
