// Package config declares every MSCCLPP_* environment variable the library reads, once, with its
// default, its parser and a line of documentation. Values are read lazily on first use, cached, and
// logged at INFO when the environment overrides the default.
//
// docs/CONFIG.md lists the same table for users; TestDocsListEveryVariable keeps the two in step.
package config
