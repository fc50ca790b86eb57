// Package record holds the types every other Joinery package shares: join
// keys, source positions and a key's offsets per partition (Offsets), CDC
// changes and join outputs. It is the leaf of the import graph: it imports
// only the standard library and no Joinery package imports anything that it
// does not.
package record
