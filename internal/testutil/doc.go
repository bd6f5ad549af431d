// Package testutil holds small helpers shared by the tests of several packages. Nothing in the
// library imports it.
package testutil
