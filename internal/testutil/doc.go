// Package testutil holds small helpers shared by the tests of several packages. Nothing in the
// library imports it, and it imports nothing of core (internal/ never does: see
// internal/layering); helpers that need CUDA are in core/cuda/cudatest.
package testutil
