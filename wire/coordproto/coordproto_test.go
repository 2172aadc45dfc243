package coordproto

import "testing"

func TestIsReplyInbox(t *testing.T) {
	for reply, want := range map[string]bool{
		"_INBOX.abc":              true,
		"_INBOX.UABCDEF.x7Yz.3":   true,
		"_INBOX":                  false,
		"_INBOX.":                 false,
		"_INBOX.>":                false,
		"_INBOX.a.*":              false,
		"_INBOX..a":               false,
		"_INBOX.a b":              false,
		"dcpi.coord.cut":          false,
		"$JS.API.STREAM.DELETE.X": false,
		"dcpi.batch.alpha2.0":     false,
		"_INBOXES.a":              false,
	} {
		if got := IsReplyInbox(reply); got != want {
			t.Errorf("IsReplyInbox(%q) = %v, want %v", reply, got, want)
		}
	}
}
