//go:build (desktop || bindings || dev) && linux

package cli

// The window's urgency hint on Linux (GTK 3): the taskbar's "needs attention" (_NET_WM_STATE_
// DEMANDS_ATTENTION under EWMH window managers), which never raises the window or moves the
// focus. Wails v2 has no call for it, so it is set on the application's toplevel windows with
// gtk_window_set_urgency_hint, on GTK's main thread (g_idle_add), where every GTK call belongs.

/*
#cgo pkg-config: gtk+-3.0
#include <gtk/gtk.h>

static gboolean poppydesk_apply_urgency(gpointer data) {
	gboolean on = GPOINTER_TO_INT(data);
	GList *wins = gtk_window_list_toplevels();
	for (GList *l = wins; l != NULL; l = l->next) {
		GtkWindow *w = GTK_WINDOW(l->data);
		if (gtk_window_get_window_type(w) == GTK_WINDOW_TOPLEVEL && gtk_widget_get_visible(GTK_WIDGET(w))) {
			gtk_window_set_urgency_hint(w, on);
		}
	}
	g_list_free(wins);
	return G_SOURCE_REMOVE;
}

static void poppydesk_set_urgency(int on) {
	g_idle_add(poppydesk_apply_urgency, GINT_TO_POINTER(on));
}
*/
import "C"

// setUrgent sets or clears the urgency hint of the window.
func setUrgent(on bool) {
	v := 0
	if on {
		v = 1
	}
	C.poppydesk_set_urgency(C.int(v))
}
