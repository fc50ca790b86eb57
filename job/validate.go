package job

// Validate reports every problem of the spec, each naming its field, once
// (and nothing about a secret field whose value could not be read): it is
// Compile with the Plan dropped.
func (s *Spec) Validate() error {
	_, err := Compile(s)
	return err
}
