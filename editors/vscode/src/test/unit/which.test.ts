import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, test } from "node:test";
import { which } from "../../common/which";

describe("which", () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "tether-which-"));
  const a = path.join(root, "a");
  const b = path.join(root, "b");
  fs.mkdirSync(a);
  fs.mkdirSync(b);
  fs.writeFileSync(path.join(a, "tether"), "#!/bin/sh\n", { mode: 0o644 }); // not executable
  fs.writeFileSync(path.join(b, "tether"), "#!/bin/sh\n", { mode: 0o755 });
  fs.mkdirSync(path.join(a, "dir-named-tether"));

  test("first executable regular file wins; non-executables are skipped", () => {
    assert.equal(which("tether", [a, b].join(path.delimiter)), path.join(b, "tether"));
  });

  test("directories and missing names are not found", () => {
    assert.equal(which("dir-named-tether", a), null);
    assert.equal(which("nope", [a, b].join(path.delimiter)), null);
  });

  test("relative PATH entries and names with slashes are ignored", () => {
    const cwd = process.cwd();
    process.chdir(root);
    try {
      assert.equal(which("tether", "b"), null, "a relative PATH entry is never searched");
      assert.equal(which("b/tether", b), null);
    } finally {
      process.chdir(cwd);
    }
  });
});
