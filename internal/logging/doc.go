// Package logging is the library's one log/slog handler. Every line carries the host name, the
// process id and the rank ("-" before a rank is known), and goes to one sink: standard output by
// default, or the callback that mscclppSetLogHandler installs. The level comes from MSCCLPP_DEBUG
// (WARN by default, INFO, or TRACE, which is below slog.LevelDebug).
//
// Line format:
//
//	host:pid [rank] MSCCLPP LEVEL message key=value ...
package logging
