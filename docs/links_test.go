// Package docs holds the operator's documentation. Its test checks that
// every relative link in README.md, CHANGELOG.md, docs/*.md and the benchmark results'
// Markdown (test/bench/results/**/*.md) leads to a file or folder that
// exists in the repository and, when it names an anchor (#heading) of a
// Markdown file, to a heading of that file, with GitHub's anchor rules.
// It reads only files: no network.
package docs

import (
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// repoRoot is the repository's root, seen from this package's folder,
// where go test runs.
const repoRoot = ".."

// markdownFiles lists the files whose links are checked, relative to the
// repository's root.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "CHANGELOG.md"}
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range docs {
		files = append(files, filepath.ToSlash(filepath.Join("docs", filepath.Base(f))))
	}
	results := filepath.Join(repoRoot, "test", "bench", "results")
	err = filepath.WalkDir(results, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, err := filepath.Rel(repoRoot, path)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestRelativeLinksResolve(t *testing.T) {
	files := markdownFiles(t)
	if len(files) < 10 {
		t.Fatalf("found only %d Markdown files to check (%v): is the test running in docs/?", len(files), files)
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	anchorCache := map[string]map[string]bool{}
	anchorsOf := func(path string) (map[string]bool, error) {
		if a, ok := anchorCache[path]; ok {
			return a, nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		a := anchors(string(text))
		anchorCache[path] = a
		return a, nil
	}
	checked := 0
	for _, file := range files {
		text, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links(string(text)) {
			if isExternal(l.dest) {
				continue
			}
			checked++
			if problem := checkLink(root, file, l.dest, anchorsOf); problem != "" {
				t.Errorf("%s:%d: link %q: %s", file, l.line, l.dest, problem)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link found: the link parser is broken")
	}
	t.Logf("checked %d relative links in %d files", checked, len(files))
}

// checkLink returns what is wrong with dest, a relative link in file (both
// relative to root), or "" when it resolves.
func checkLink(root, file, dest string, anchorsOf func(string) (map[string]bool, error)) string {
	pathPart, fragment, _ := strings.Cut(dest, "#")
	pathPart, err := url.PathUnescape(pathPart)
	if err != nil {
		return fmt.Sprintf("bad escape in path: %v", err)
	}
	fragment, err = url.PathUnescape(fragment)
	if err != nil {
		return fmt.Sprintf("bad escape in anchor: %v", err)
	}
	target := filepath.Join(root, file)
	if pathPart != "" {
		if strings.HasPrefix(pathPart, "/") {
			return "absolute path: GitHub resolves it against the site, not the repository; make it relative"
		}
		target = filepath.Join(root, filepath.Dir(file), filepath.FromSlash(pathPart))
	}
	rel, err := filepath.Rel(root, target)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "points outside the repository"
	}
	info, err := os.Stat(target)
	if err != nil {
		return fmt.Sprintf("no such file or folder %s", filepath.ToSlash(rel))
	}
	if fragment == "" || info.IsDir() || !strings.HasSuffix(target, ".md") {
		return ""
	}
	a, err := anchorsOf(target)
	if err != nil {
		return err.Error()
	}
	if !a[fragment] {
		return fmt.Sprintf("no heading of %s makes the anchor #%s (it has %s)", filepath.ToSlash(rel), fragment, strings.Join(sortedKeys(a), ", "))
	}
	return ""
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// isExternal reports whether dest leaves the repository: a URL with a
// scheme (https:, mailto:) or a protocol-relative one.
func isExternal(dest string) bool {
	if strings.HasPrefix(dest, "//") {
		return true
	}
	u, err := url.Parse(dest)
	return err == nil && u.Scheme != ""
}

type link struct {
	dest string
	line int
}

var (
	// inlineLink matches the destination of [text](dest) and ![alt](dest),
	// with an optional title; the text may hold brackets of its own.
	inlineLink = regexp.MustCompile(`\]\(\s*<?([^()\s<>]*)>?(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)`)
	// referenceDefinition matches [label]: dest.
	referenceDefinition = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s.*)?$`)
	// htmlAnchor matches <a name="x"> and id="x", which GitHub keeps as
	// anchors (prefixed with user-content-, which it resolves).
	htmlAnchor = regexp.MustCompile(`<a\s[^>]*(?:name|id)="([^"]+)"`)
)

// links returns the link destinations of a Markdown text, outside code
// blocks and code spans, with their line numbers.
func links(text string) []link {
	var out []link
	for i, line := range proseLines(text) {
		if line == "" {
			continue
		}
		if m := referenceDefinition.FindStringSubmatch(line); m != nil {
			out = append(out, link{dest: m[1], line: i + 1})
			continue
		}
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			if m[1] != "" {
				out = append(out, link{dest: m[1], line: i + 1})
			}
		}
	}
	return out
}

// proseLines returns the text's lines with fenced code blocks blanked out
// and code spans and HTML comments removed, so that the brackets of a
// pattern such as `[a-z]([-a-z]*)` are not taken for a link. Line numbers
// stay as in the text.
func proseLines(text string) []string {
	lines := strings.Split(text, "\n")
	out := make([]string, len(lines))
	fence := ""
	inComment := false
	for i, line := range lines {
		trimmed := strings.TrimLeft(line, " \t")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]+" \t") == "" {
				fence = ""
			}
			continue
		}
		if f := fenceOpening(trimmed); f != "" {
			fence = f
			continue
		}
		line, inComment = stripComments(line, inComment)
		out[i] = stripCodeSpans(line)
	}
	return out
}

// fenceOpening returns the fence (``` or ~~~, as long as written) that
// opens a fenced code block on this line, or "".
func fenceOpening(trimmed string) string {
	for _, c := range []string{"`", "~"} {
		n := len(trimmed) - len(strings.TrimLeft(trimmed, c))
		if n >= 3 {
			if c == "`" && strings.Contains(trimmed[n:], "`") {
				return "" // a code span, not a fence
			}
			return strings.Repeat(c, n)
		}
	}
	return ""
}

// stripComments removes HTML comments, which may span lines.
func stripComments(line string, inComment bool) (string, bool) {
	var b strings.Builder
	for line != "" {
		if inComment {
			end := strings.Index(line, "-->")
			if end < 0 {
				return b.String(), true
			}
			line = line[end+3:]
			inComment = false
			continue
		}
		start := strings.Index(line, "<!--")
		if start < 0 {
			b.WriteString(line)
			break
		}
		b.WriteString(line[:start])
		line = line[start+4:]
		inComment = true
	}
	return b.String(), inComment
}

// stripCodeSpans removes code spans: a run of backticks up to the next run
// of the same length. An unmatched run stays as text.
func stripCodeSpans(line string) string {
	var b strings.Builder
	for {
		start := strings.Index(line, "`")
		if start < 0 {
			b.WriteString(line)
			return b.String()
		}
		n := len(line[start:]) - len(strings.TrimLeft(line[start:], "`"))
		ticks := line[start : start+n]
		rest := line[start+n:]
		end := -1
		for off := 0; off < len(rest); {
			j := strings.Index(rest[off:], ticks)
			if j < 0 {
				break
			}
			j += off
			m := len(rest[j:]) - len(strings.TrimLeft(rest[j:], "`"))
			if m == n {
				end = j
				break
			}
			off = j + m
		}
		if end < 0 {
			b.WriteString(line[:start+n])
			line = rest
			continue
		}
		b.WriteString(line[:start])
		line = rest[end+n:]
	}
}

var (
	atxHeading = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)
	// headingLink is a link or image in a heading, whose text alone counts.
	headingLink = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	htmlTag     = regexp.MustCompile(`<[^>]+>`)
)

// anchors returns the anchors that GitHub makes for the headings of a
// Markdown text (ATX headings, outside code blocks), and those of HTML
// anchors written into it.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	lines := strings.Split(text, "\n")
	fence := ""
	for _, line := range lines {
		trimmed := strings.TrimLeft(line, " \t")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]+" \t") == "" {
				fence = ""
			}
			continue
		}
		if f := fenceOpening(trimmed); f != "" {
			fence = f
			continue
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
		m := atxHeading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		s := slug(m[2])
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// slug is GitHub's anchor for a heading: the heading's text (links reduced
// to their text, HTML tags and code-span backticks dropped), in lower case,
// with every character but letters, digits, marks, '_', '-' and spaces
// dropped and each space turned into '-'. A repeated slug gets -1, -2, …
// appended (see anchors).
func slug(heading string) string {
	text := headingLink.ReplaceAllString(heading, "$1")
	text = htmlTag.ReplaceAllString(text, "")
	text = strings.TrimSpace(strings.ToLower(text))
	var b strings.Builder
	for _, r := range text {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestSlug(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"What `make run` shows", "what-make-run-shows"},
		{"Moving from the tutorial's operator", "moving-from-the-tutorials-operator"},
		{"Retention, with a worked example", "retention-with-a-worked-example"},
		{"The admission policy: defence in depth", "the-admission-policy-defence-in-depth"},
		{"What `deploy/` holds", "what-deploy-holds"},
		{"Tenants' kubeconfigs", "tenants-kubeconfigs"},
		{"N = 100", "n--100"},
		{"2026-12-01, issue 11: fdc80ce, the desired child (Intel Xeon machine)", "2026-12-01-issue-11-fdc80ce-the-desired-child-intel-xeon-machine"},
		{"A [linked](other.md#x) heading", "a-linked-heading"},
		{"snake_case and Ünïcode", "snake_case-and-ünïcode"},
		{"  Trailing  ", "trailing"},
	} {
		if got := slug(tc.heading); got != tc.want {
			t.Errorf("slug(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
}

func TestAnchors(t *testing.T) {
	text := "# Title\n\n## Examples\n\n```sh\n# not a heading\n```\n\n## Examples\n\n### Closed ###\n\n<a name=\"custom\"></a>\n#NoSpace\n"
	got := sortedKeys(anchors(text))
	want := []string{"closed", "custom", "examples", "examples-1", "title"}
	if !slices.Equal(got, want) {
		t.Errorf("anchors = %v, want %v", got, want)
	}
}

func TestLinks(t *testing.T) {
	text := strings.Join([]string{
		"See [the guide](docs/website.md#fields) and ![chart](a.svg \"title\").",
		"A pattern `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$` is not a link, nor ``[x](y)``.",
		"```",
		"[in a block](nowhere.md)",
		"```",
		"<!-- [in a comment](nowhere.md) -->",
		"[`code` text](https://example.com) and [anchor](#here)",
		"[ref]: ../other.md",
	}, "\n")
	var got []string
	for _, l := range links(text) {
		got = append(got, fmt.Sprintf("%d %s", l.line, l.dest))
	}
	want := []string{"1 docs/website.md#fields", "1 a.svg", "7 https://example.com", "7 #here", "8 ../other.md"}
	if !slices.Equal(got, want) {
		t.Errorf("links = %q, want %q", got, want)
	}
}

func TestCheckLinkFindsBrokenLinks(t *testing.T) {
	root := t.TempDir()
	for path, text := range map[string]string{
		"README.md":     "# Title\n\n## Install it\n",
		"docs/guide.md": "# Guide\n",
	} {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, path), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	anchorsOf := func(path string) (map[string]bool, error) {
		text, err := os.ReadFile(path)
		return anchors(string(text)), err
	}
	for _, tc := range []struct {
		file, dest string
		ok         bool
	}{
		{"README.md", "docs/guide.md", true},
		{"README.md", "docs/guide.md#guide", true},
		{"README.md", "#install-it", true},
		{"README.md", "docs/", true},
		{"docs/guide.md", "../README.md#install-it", true},
		{"docs/guide.md", "../README.md#Install-it", false},
		{"README.md", "#install", false},
		{"README.md", "docs/missing.md", false},
		{"docs/guide.md", "guide.md#nowhere", false},
		{"docs/guide.md", "../../outside.md", false},
		{"README.md", "/docs/guide.md", false},
	} {
		problem := checkLink(root, tc.file, tc.dest, anchorsOf)
		if (problem == "") != tc.ok {
			t.Errorf("checkLink(%s, %q) = %q, want ok=%v", tc.file, tc.dest, problem, tc.ok)
		}
	}
}
