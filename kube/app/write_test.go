package app

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// TestWriteBuildsOnlyTheFormServed: an answer asked as JSON does not
// render its text (which for a page of 5,000 items cost as much as the
// JSON), and one asked as text is not encoded as JSON.
func TestWriteBuildsOnlyTheFormServed(t *testing.T) {
	for _, tc := range []struct {
		name, query string
		wantTexts   int
		wantBody    string
		wantType    string
	}{
		{name: "json by default", query: "", wantTexts: 0, wantBody: `"a": 1`, wantType: "application/json"},
		{name: "json asked", query: "?format=json", wantTexts: 0, wantBody: `"a": 1`, wantType: "application/json"},
		{name: "text asked", query: "?format=text", wantTexts: 1, wantBody: "the text", wantType: "text/plain; charset=utf-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			texts := 0
			text := func() string { texts++; return "the text" }
			w := httptest.NewRecorder()
			write(w, httptest.NewRequest("GET", "/debug/queue"+tc.query, nil), map[string]int{"a": 1}, text)
			if texts != tc.wantTexts {
				t.Errorf("the text was rendered %d times, want %d", texts, tc.wantTexts)
			}
			if got := w.Body.String(); !strings.Contains(got, tc.wantBody) || (tc.wantTexts == 1 && strings.Contains(got, `"a"`)) {
				t.Errorf("body %q, want only %q", got, tc.wantBody)
			}
			if got := w.Header().Get("Content-Type"); got != tc.wantType {
				t.Errorf("Content-Type %q, want %q", got, tc.wantType)
			}
		})
	}
}
