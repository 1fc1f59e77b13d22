package envelope

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
)

// Explain words a JSON decoding error in the document's own terms: the
// line, the field as the document's keys spell it, what the field wants
// and what it got, never a Go type or struct name. doc is the whole file
// and payload the part of it that was decoded (the same bytes for a bare
// document); errors of other kinds come back unchanged.
func Explain(doc, payload []byte, err error) error {
	base := 0
	if len(payload) > 0 && len(payload) < len(doc) {
		if i := bytes.Index(doc, payload); i > 0 {
			base = i
		}
	}
	line := func(off int64) int {
		end := min(base+int(off), len(doc))
		return 1 + bytes.Count(doc[:max(end, 0)], []byte("\n"))
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "the document"
		}
		return fmt.Errorf("line %d: %s wants %s, got %s", line(te.Offset), field, Plain(te.Type), article(te.Value))
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("line %d: not valid JSON: %s", line(se.Offset), se.Error())
	}
	return err
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// Plain names what a Go type holds as a reader of the document knows it.
func Plain(t reflect.Type) string {
	if t == nil {
		return "another value"
	}
	if reflect.PointerTo(t).Implements(textUnmarshaler) {
		return "text"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return Plain(t.Elem())
	case reflect.String:
		return "text"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list of " + plural(Plain(t.Elem()))
	case reflect.Map, reflect.Struct:
		return "an object {…}"
	}
	return "another value"
}

func plural(s string) string {
	switch s {
	case "text":
		return "texts"
	case "a whole number":
		return "whole numbers"
	case "a number":
		return "numbers"
	case "an object {…}":
		return "objects"
	case "true or false":
		return "true/false values"
	}
	return "values"
}

// article turns encoding/json's value kind ("number", "string", "array")
// into words.
func article(v string) string {
	switch v {
	case "number":
		return "a number"
	case "string":
		return "text"
	case "array":
		return "a list"
	case "object":
		return "an object"
	case "bool":
		return "true or false"
	}
	if len(v) > 7 && v[:7] == "number " {
		return "the number " + v[7:]
	}
	return v
}
