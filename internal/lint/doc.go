// Package lint holds the repository's import-graph test (lint_test.go):
// each package's doc says what it must not import, and the test fails when
// one does; and the file-length test (size_test.go): no non-test,
// non-generated .go file over MaxLines lines. It has no code of its own.
package lint
