// Package cudatest holds test helpers that need the CUDA driver layer (package cuda), for the
// tests of the packages above it. It lives beside core/cuda, not in internal/, so that internal/
// never imports core. Nothing in the library imports it.
package cudatest
