// Package pkgdoc has no code of its own: its test walks the module and
// fails on any package without a package doc comment, so that every package
// says what it is and what it guarantees. A library package's doc starts
// "Package <name> ", a command's "Command <directory> ".
package pkgdoc
