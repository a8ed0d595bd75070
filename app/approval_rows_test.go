package app_test

import (
	"testing"

	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/fronts"
)

// checkRow finds approval id where the window lists it (List for an open one, else the pages of
// Earlier) and checks that the row says what the item the dialog opens (Get) says: the row is
// built from the stored records without the item's conversion, so each field is compared.
func checkRow(t *testing.T, a *fronts.Approvals, id string) fronts.ApprovalRow {
	t.Helper()
	it, err := a.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := a.List()
	if err != nil {
		t.Fatal(err)
	}
	for cursor := ""; ; {
		p, err := a.Earlier(cursor, app.ApprovalsPageMax)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, p.Items...)
		if cursor = p.Next; cursor == "" {
			break
		}
	}
	var row *fronts.ApprovalRow
	for i := range rows {
		if rows[i].ID == id {
			if row != nil {
				t.Fatalf("approval %s is listed twice", id)
			}
			row = &rows[i]
		}
	}
	if row == nil {
		t.Fatalf("approval %s (%s) is not listed", id, it.State)
	}
	want := fronts.ApprovalRow{ID: it.ID, Company: it.Company, CompanyName: it.CompanyName, CompanyDomain: it.CompanyDomain, Account: it.Account,
		Interface: it.Interface, State: it.State, Decidable: it.Decidable, Violation: it.Violation, SummaryText: it.Current.SummaryText,
		ExpiresAt: it.Current.ExpiresAt, Created: it.Created, Updated: it.Updated, Decided: it.Decided}
	if *row != want {
		t.Fatalf("the list's row of %s differs from its item:\n row  %+v\n item %+v", id, *row, want)
	}
	return *row
}
