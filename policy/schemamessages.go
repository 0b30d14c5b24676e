package policy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// keywordMessage says what a failing keyword of schema object s wants:
// the schema's own message when it has one (editors show the same), else
// one made from the keyword and its bounds.
func keywordMessage(s map[string]any, k jsonschema.ErrorKind) string {
	if msg := str(s, "patternErrorMessage"); msg != "" {
		if _, ok := k.(*kind.Pattern); ok {
			return msg
		}
	}
	if msg := str(s, "errorMessage"); msg != "" {
		return msg
	}
	switch k := k.(type) {
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = fmt.Sprint(w)
		}
		return fmt.Sprintf("%s is not one of %s", valueInWords(k.Got), strings.Join(want, ", "))
	case *kind.Const:
		return "want " + valueInWords(k.Want)
	case *kind.Pattern:
		return "want text matching " + k.Want
	case *kind.Minimum:
		return fmt.Sprintf("%s: want %s", k.Got.RatString(), bounds(s, "minimum", "maximum", ""))
	case *kind.Maximum:
		return fmt.Sprintf("%s: want %s", k.Got.RatString(), bounds(s, "minimum", "maximum", ""))
	case *kind.MinItems:
		return fmt.Sprintf("want %s, have %d", bounds(s, "minItems", "maxItems", "items"), k.Got)
	case *kind.MaxItems:
		return fmt.Sprintf("want %s, have %d", bounds(s, "minItems", "maxItems", "items"), k.Got)
	case *kind.MinProperties:
		return fmt.Sprintf("want %s, have %d", bounds(s, "minProperties", "maxProperties", "entries"), k.Got)
	case *kind.MaxProperties:
		return fmt.Sprintf("want %s, have %d", bounds(s, "minProperties", "maxProperties", "entries"), k.Got)
	case *kind.MinLength:
		return "must not be empty"
	case *kind.Not:
		return "not allowed here"
	case *kind.OneOf, *kind.AnyOf:
		return "matches none of the forms allowed here"
	}
	if kw := k.KeywordPath(); len(kw) > 0 {
		return "refused by the schema's " + strings.Join(kw, "/")
	}
	return "not allowed here"
}

// bounds spells the range a schema object allows, e.g. "1 to 16 items".
func bounds(s map[string]any, minKey, maxKey, noun string) string {
	lo, hasLo := s[minKey]
	hi, hasHi := s[maxKey]
	out := ""
	switch {
	case hasLo && hasHi:
		out = fmt.Sprintf("%v to %v", lo, hi)
	case hasLo:
		out = fmt.Sprintf("at least %v", lo)
	default:
		out = fmt.Sprintf("at most %v", hi)
	}
	if noun != "" {
		out += " " + noun
	}
	return out
}

// propertyNames lists the keys a schema object allows, sorted, less
// its former words: read, but offered no more.
func propertyNames(s map[string]any) []string {
	props, _ := s["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for name, prop := range props {
		if p, _ := prop.(map[string]any); p["deprecated"] != true { // a former word (words.go)
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

func str(s map[string]any, key string) string {
	v, _ := s[key].(string)
	return v
}

// jsonTypeInWords says what a JSON type is in a YAML file.
func jsonTypeInWords(t string) string {
	switch t {
	case "object":
		return "a mapping"
	case "array":
		return "a list"
	case "string":
		return "text"
	case "integer":
		return "a whole number"
	case "number":
		return "a number"
	case "boolean":
		return "true or false"
	}
	return "nothing"
}

func valueInWords(v any) string {
	switch v := v.(type) {
	case nil:
		return "nothing"
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case string:
		return strconv.Quote(v)
	}
	return fmt.Sprint(v)
}
