import { describe, expect, it } from "vitest";
import { redactUrlPasswords } from "../src/core/text";

describe("redactUrlPasswords", () => {
  it("hides the password of every URL in a text, keeping the user name, host and the rest", () => {
    expect(redactUrlPasswords("unable to open bucket postgres://team:s3cr%40t:x@127.0.0.1:5432/state?sslmode=disable: refused")).toBe(
      "unable to open bucket postgres://team:****@127.0.0.1:5432/state?sslmode=disable: refused",
    );
    expect(redactUrlPasswords("a s3://AKIA:wJalr/x@b and postgres://:pw@h/db")).toBe("a s3://AKIA:****@b and postgres://:****@h/db");
  });

  it("hides a password given as a query parameter", () => {
    expect(redactUrlPasswords("postgres://h/db?user=team&password=pw&sslmode=disable")).toBe("postgres://h/db?user=team&password=****&sslmode=disable");
  });

  it("leaves URLs without a password as they are (a user name alone is no secret)", () => {
    for (const t of ["postgres://team@127.0.0.1:5432/state", "file://./.pulumi-state", "http://127.0.0.11:30080/", "user:pw is not a URL"]) {
      expect(redactUrlPasswords(t)).toBe(t);
    }
  });
});
