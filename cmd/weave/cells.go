package main

import "github.com/charmbracelet/lipgloss"

// cellWidth is how many terminal cells s takes: wide characters (CJK,
// emoji) take two, escape sequences none.
func cellWidth(s string) int { return lipgloss.Width(s) }
