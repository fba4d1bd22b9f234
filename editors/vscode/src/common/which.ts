/** Find an executable on PATH, like `which`: the server may be `tether` on PATH (settings.ts). */
import * as fs from "node:fs";
import * as path from "node:path";

/** The absolute path of the first executable regular file `name` in `searchPath`, or null. */
export function which(name: string, searchPath = process.env.PATH ?? ""): string | null {
  if (!name || name.includes("/")) return null;
  for (const dir of searchPath.split(path.delimiter)) {
    if (!dir || !path.isAbsolute(dir)) continue; // a relative PATH entry would resolve against the workspace
    const candidate = path.join(dir, name);
    try {
      if (!fs.statSync(candidate).isFile()) continue;
      fs.accessSync(candidate, fs.constants.X_OK);
      return candidate;
    } catch {
      // not here; keep looking
    }
  }
  return null;
}
