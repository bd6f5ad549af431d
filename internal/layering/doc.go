// Package layering has no code: its test checks the direction of the imports of internal/.
// internal/ sits below core, so no package in it, and no test of one, may import core or any
// package under core, directly or through another package.
package layering
