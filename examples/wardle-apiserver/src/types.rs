//! The `wardle.example.com/v1alpha1` API of Kubernetes' sample-apiserver, as
//! resource definitions.

/// Namespaced. `spec.reference` names a Flunder or a Fischer, `spec.referenceType`
/// says which.
pub const FLUNDER: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: flunders.wardle.example.com}
spec:
  group: wardle.example.com
  scope: Namespaced
  names: {plural: flunders, singular: flunder, kind: Flunder, listKind: FlunderList}
  versions:
  - name: v1alpha1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Reference, type: string, jsonPath: .spec.reference}
    - {name: Type, type: string, jsonPath: .spec.referenceType}
    schema:
      openAPIV3Schema:
        type: object
        description: A Flunder is sample-apiserver's namespaced example type.
        properties:
          spec:
            type: object
            properties:
              reference:
                type: string
                description: The name of the Flunder or Fischer this Flunder refers to.
              referenceType:
                type: string
                description: What the reference names, Flunder or Fischer.
                enum: [Flunder, Fischer]
          status:
            type: object
            x-kubernetes-preserve-unknown-fields: true
"#;

/// Cluster-scoped. `disallowedFlunders` lists names no Flunder may take.
pub const FISCHER: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: fischers.wardle.example.com}
spec:
  group: wardle.example.com
  scope: Cluster
  names: {plural: fischers, singular: fischer, kind: Fischer, listKind: FischerList}
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        description: A Fischer keeps names away from Flunders.
        properties:
          disallowedFlunders:
            type: array
            description: Names a Flunder may not have.
            items: {type: string}
"#;
