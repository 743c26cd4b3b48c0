// Package testtool finds the tools the packaging tests run (lintian,
// podman, groff, ...): a test without its tool is skipped, or fails in CI
// (CI=true), where .ci/run installs every one.
package testtool
