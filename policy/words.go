package policy

import (
	"fmt"
	"slices"
)

// The words of a policy file name one thing each. A kind (kinds:) is a
// kind of lockable thing, and its template (template:) spells the names of
// its resources; a resource is one such thing, which an operation's
// resource: and resources: and a client's sql_resources name; access:
// says whether an operation writes or reads.
//
// Until 0.3.0 the loader reads three former words too, each deprecated:
// the top-level resources: (now kinds:), a kind's key: (now template: —
// a key is also an idempotency key, a signing key, an etcd key) and an
// operation's kind: (now access:, kind being a kind's word). A file that
// spells one thing both ways is refused: which spelling wins would be a
// guess.

// spelling is how a file spells the entries that have a former word, so
// that a problem names the entry as the file wrote it.
type spelling struct {
	kinds    string            // "kinds", or the former "resources"
	template map[string]string // by kind: "template", or the former "key"
	access   map[string]string // by operation: "access", or the former "kind"
}

// formerWord is one former word a file uses: where first, and how often.
type formerWord struct {
	old, now string
	first    string // the entry
	more     int
}

// settleWords moves what doc spells with former words to the current
// ones. It returns the file's spelling and one deprecation message for
// each former word it uses, and adds a problem for each thing spelled both
// ways.
func settleWords(ps *problems, doc *fileDoc) (spelling, []string) {
	sp := spelling{kinds: "kinds", template: map[string]string{}, access: map[string]string{}}
	var used []formerWord
	note := func(old, now, entry string) {
		if i := slices.IndexFunc(used, func(w formerWord) bool { return w.old == old }); i >= 0 {
			used[i].more++
			return
		}
		used = append(used, formerWord{old: old, now: now, first: entry})
	}
	switch {
	case doc.Resources != nil && doc.Kinds != nil:
		ps.add("resources", "the kinds are declared twice, under kinds: and under resources:, its former name: keep kinds: only")
	case doc.Resources != nil:
		doc.Kinds, doc.Resources = doc.Resources, nil
		sp.kinds = "resources"
		note("resources", "kinds", "") // at the top: the word is its entry
	}
	for _, name := range sortedKeys(doc.Kinds) {
		k, entry := doc.Kinds[name], sp.kinds+"."+name
		sp.template[name] = "template"
		switch {
		case k.Key != "" && k.Template != "":
			ps.add(entry+".key", "the template is given twice, as template: and as key:, its former name: keep template: only")
		case k.Key != "":
			k.Template, k.Key = k.Key, ""
			doc.Kinds[name] = k
			sp.template[name] = "key"
			note("key", "template", entry+".key")
		}
	}
	for _, name := range sortedKeys(doc.Operations) {
		op, entry := doc.Operations[name], "operations."+name
		sp.access[name] = "access"
		switch {
		case op.Kind != "" && op.Access != "":
			ps.add(entry+".kind", "the access is given twice, as access: and as kind:, its former name: keep access: only")
		case op.Kind != "":
			op.Access, op.Kind = op.Kind, ""
			doc.Operations[name] = op
			sp.access[name] = "kind"
			note("kind", "access", entry+".kind")
		}
	}
	msgs := make([]string, len(used))
	for i, w := range used {
		msgs[i] = fmt.Sprintf("%s: is deprecated and goes in 0.3.0: write %s: instead", w.old, w.now)
		switch {
		case w.more > 0:
			msgs[i] += fmt.Sprintf(" (%s and %d more)", w.first, w.more)
		case w.first != "":
			msgs[i] += " (" + w.first + ")"
		}
	}
	return sp, msgs
}

// Deprecations lists the former words the policy file uses, one message
// for each word, for the gateway to log and `fencegw policy check` to
// print; none for a file in current words.
func (p *Policy) Deprecations() []string { return slices.Clone(p.deprecated) }
