module github.com/joinery/joinery

go 1.26
