package main

import (
	"fmt"
	"io"
)

// printConfigErrors prints each error of a config file on its own line
// (config.NewBroker joins them when the file has more than one).
func printConfigErrors(w io.Writer, file string, err error) {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		fmt.Fprintf(w, "sluice: config file %s: %v\n", file, e)
	}
}
