package vault

import (
	ss "github.com/zalando/go-keyring/secret_service"
)

// setLabelled stores password as go-keyring's Set does on Linux (an item of the login collection
// with the attributes service and username, replacing one with the same attributes, so that
// go-keyring's Get and Delete find it), but with label as the item's label: go-keyring's own Set
// always writes "Password for 'USER' on 'SERVICE'" and has no way to give another. It uses
// go-keyring's exported Secret Service client.
func setLabelled(service, user, label, password string) error {
	svc, err := ss.NewSecretService()
	if err != nil {
		return err
	}
	session, err := svc.OpenSession()
	if err != nil {
		return err
	}
	defer svc.Close(session)
	collection := svc.GetLoginCollection()
	if err := svc.Unlock(collection.Path()); err != nil {
		return err
	}
	return svc.CreateItem(collection, label, map[string]string{"username": user, "service": service},
		ss.NewSecret(session.Path(), password))
}
