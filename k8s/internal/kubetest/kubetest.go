// Package kubetest is the API server of the tests: a fake clientset.
package kubetest

import (
	"fmt"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// Client is a fake clientset holding the node, which names created objects
// from their generateName as the API server does (the ResourceSlice
// controller names its slices that way).
func Client(nodeName string) *fake.Clientset {
	client := fake.NewClientset(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, UID: types.UID("uid-of-" + nodeName)}})
	var n atomic.Int64
	client.PrependReactor("create", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if obj, ok := action.(clienttesting.CreateAction).GetObject().(metav1.Object); ok && obj.GetName() == "" && obj.GetGenerateName() != "" {
			obj.SetName(fmt.Sprintf("%s%05d", obj.GetGenerateName(), n.Add(1)))
		}
		return false, nil, nil
	})
	return client
}
